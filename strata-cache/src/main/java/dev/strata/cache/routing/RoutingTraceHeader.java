package dev.strata.cache.routing;

import java.nio.charset.StandardCharsets;

/**
 * The shape of every step in a routing trace: how many MoE layers a forward pass crosses, how many
 * experts each layer has (ids {@code 0..experts-1}), how many a token is routed to per layer, and
 * an optional model name or fingerprint so that a trace is replayed against the model it came
 * from. Immutable; any thread.
 *
 * @param layers  MoE layers per forward pass, {@code 1..}{@link RoutingTraceFormat#MAX_LAYERS}
 * @param experts experts per layer, {@code 1..}{@link RoutingTraceFormat#MAX_EXPERTS} (ids are u16)
 * @param topK    experts per token per layer, {@code 1..experts}
 * @param model   model name or fingerprint, empty when unknown; at most
 *                {@link RoutingTraceFormat#MAX_MODEL_BYTES} bytes of UTF-8
 */
public record RoutingTraceHeader(int layers, int experts, int topK, String model) {

    /** @throws IllegalArgumentException naming the value out of range */
    public RoutingTraceHeader {
        if (layers < 1 || layers > RoutingTraceFormat.MAX_LAYERS) {
            throw new IllegalArgumentException("layers must be in 1.." + RoutingTraceFormat.MAX_LAYERS + ", got " + layers);
        }
        if (experts < 1 || experts > RoutingTraceFormat.MAX_EXPERTS) {
            throw new IllegalArgumentException("experts per layer must be in 1.." + RoutingTraceFormat.MAX_EXPERTS + ", got " + experts);
        }
        if (topK < 1 || topK > experts) {
            throw new IllegalArgumentException("top-k must be in 1..experts (" + experts + "), got " + topK);
        }
        if (model == null) {
            model = "";
        }
        int bytes = model.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > RoutingTraceFormat.MAX_MODEL_BYTES) {
            throw new IllegalArgumentException("model name is " + bytes + " bytes of UTF-8, at most "
                    + RoutingTraceFormat.MAX_MODEL_BYTES + " allowed");
        }
    }

    /** Expert ids one token of one step carries: {@code layers × topK}. */
    public int idsPerToken() {
        return layers * topK;
    }
}
