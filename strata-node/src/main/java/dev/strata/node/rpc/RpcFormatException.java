package dev.strata.node.rpc;

import java.nio.file.Path;

/**
 * An RPC region file could not be attached: bad magic, unsupported major version, a geometry that
 * disagrees with itself, a truncated file, or a server that never finished initialising. The
 * message names the file and the values found.
 */
public final class RpcFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    public RpcFormatException(Path file, String problem) {
        super("rpc region " + file + ": " + problem);
        this.file = file;
    }

    /** The file whose contents were refused. */
    public Path file() {
        return file;
    }
}
