package dev.strata.node.rpc;

/**
 * Serves requests: reads the request from {@code call} and writes the response into it. The
 * server publishes the response when the method returns.
 *
 * <p>Threads: called only by the server's polling thread, one request at a time, in the order
 * each channel posted them. A handler that blocks delays every channel; one that throws answers
 * its request with {@link RpcStatus#HANDLER_FAILED} and the server goes on.
 */
@FunctionalInterface
public interface RpcHandler {
    void handle(RpcCall call);
}
