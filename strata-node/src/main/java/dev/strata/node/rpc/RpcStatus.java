package dev.strata.node.rpc;

/**
 * Status codes of the shared-memory RPC. Non-negative codes are the handler's own (0 is
 * {@link #OK}); negative codes are outcomes of the transport, returned by the client instead of
 * thrown, because they are expected: a full ring, a server that died or stopped.
 *
 * <p>Constants only; any thread.
 */
public final class RpcStatus {
    /** The request was served; the handler's values follow. */
    public static final int OK = 0;
    /** {@code post}: every slot of the channel holds a request whose response was not yet taken. */
    public static final int RING_FULL = -1;
    /** {@code await}: no request is outstanding. */
    public static final int NOTHING_OUTSTANDING = -2;
    /** The server process is gone (its pid does not exist, or belongs to another process now). */
    public static final int SERVER_DEAD = -3;
    /** The server shut down cleanly; the region will not be served again. */
    public static final int SERVER_STOPPED = -4;
    /** The server process lives but its polling thread has not beaten for longer than the timeout. */
    public static final int SERVER_UNRESPONSIVE = -5;
    /** The server has no handler for the request's opcode. */
    public static final int UNKNOWN_OPCODE = -6;
    /** The handler threw; the server logged it and went on. */
    public static final int HANDLER_FAILED = -7;
    /** The request's fields were out of range (e.g. a payload length larger than the slot's). */
    public static final int BAD_REQUEST = -8;

    private RpcStatus() {
    }

    /** A readable name of {@code status}. */
    public static String name(int status) {
        return switch (status) {
            case OK -> "OK";
            case RING_FULL -> "RING_FULL";
            case NOTHING_OUTSTANDING -> "NOTHING_OUTSTANDING";
            case SERVER_DEAD -> "SERVER_DEAD";
            case SERVER_STOPPED -> "SERVER_STOPPED";
            case SERVER_UNRESPONSIVE -> "SERVER_UNRESPONSIVE";
            case UNKNOWN_OPCODE -> "UNKNOWN_OPCODE";
            case HANDLER_FAILED -> "HANDLER_FAILED";
            case BAD_REQUEST -> "BAD_REQUEST";
            default -> status >= 0 ? "status " + status : "unknown status " + status;
        };
    }

    /** True for the codes saying the server is gone for good. */
    public static boolean serverLost(int status) {
        return status == SERVER_DEAD || status == SERVER_STOPPED;
    }
}
