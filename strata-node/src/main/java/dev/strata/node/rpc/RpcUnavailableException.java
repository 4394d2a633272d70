package dev.strata.node.rpc;

import java.nio.file.Path;

/**
 * No server could be reached through an RPC region at attach time: no region file, a server that
 * died or stopped, or every channel taken. The message names the region and what was found.
 * (Once attached, a lost server is reported as a status code, not an exception.)
 */
public final class RpcUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path region;

    public RpcUnavailableException(Path region, String problem) {
        super("rpc region " + region + ": " + problem);
        this.region = region;
    }

    /** The region that was tried. */
    public Path region() {
        return region;
    }
}
