package dev.strata.engine.forward;

/**
 * Receives the routing a {@link ModelRunner} uses: for every MoE layer of every forward call, the
 * top-k expert ids of each token, in rank order. Calls come layer by layer (all tokens of MoE layer
 * 0, then MoE layer 1, ...), so appending the ids as they arrive gives the layer-major order of a
 * routing-trace step.
 *
 * <p>Called on the runner's driving thread, inside the forward pass; it must not call back into
 * the runner. The runner passes its own {@code topK} array (no allocation per call): it is valid
 * only during the call and must not be kept or changed.
 */
@FunctionalInterface
public interface RoutingObserver {
    /**
     * @param moeLayer the layer's index among the MoE layers (the pager's and trace's layer)
     * @param token    the token's index within this forward call's batch
     * @param topK     the routed expert ids in rank order ({@code num_experts_per_tok} of them)
     */
    void routed(int moeLayer, int token, int[] topK);

    /** An observer telling this one, then {@code next}, every call. */
    default RoutingObserver andThen(RoutingObserver next) {
        java.util.Objects.requireNonNull(next, "next");
        return (moeLayer, token, topK) -> {
            routed(moeLayer, token, topK);
            next.routed(moeLayer, token, topK);
        };
    }
}
