package dev.strata.node.client;

import java.nio.file.Path;

/**
 * The node daemon a {@link RemoteBlockIndex} talks to is gone (died or stopped) or has not
 * answered within the configured patience. The operation was not completed, or its outcome is
 * unknown; reservations and pins taken through the lost daemon are cleared by the index (its
 * process is dead) or by the daemon (it stopped). The next call attaches to a new daemon on the
 * same rpc path if one runs.
 */
public final class NodeUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path rpcPath;

    public NodeUnavailableException(Path rpcPath, String problem) {
        super("strata node at " + rpcPath + ": " + problem);
        this.rpcPath = rpcPath;
    }

    public NodeUnavailableException(Path rpcPath, String problem, Throwable cause) {
        super("strata node at " + rpcPath + ": " + problem, cause);
        this.rpcPath = rpcPath;
    }

    public Path rpcPath() {
        return rpcPath;
    }
}
