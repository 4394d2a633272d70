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

    /**
     * The client of {@code channel} detached, or died and its channel was reclaimed: release what
     * the handler holds on its behalf. Called on the polling thread, after the client's last
     * request was served and before the channel can be attached again.
     *
     * @param died true if the client died without detaching
     */
    default void channelReleased(int channel, boolean died) {
    }
}
