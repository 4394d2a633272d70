package dev.strata.cache.routing;

import java.util.Arrays;

/**
 * The routing of one step (a forward pass over a batch of tokens): for every MoE layer and every
 * token, the top-k expert ids the router chose. Ids are kept layer-major,
 * {@code ids[(layer * tokens + token) * topK + slot]}, which is the order the forward pass
 * references experts in: layer 0 for every token, then layer 1, and so on.
 *
 * <p>Immutable once built; any thread. The constructor checks shape and range: ids in
 * {@code 0..experts-1}, no id twice among one token's top-k at one layer.
 */
public final class RoutingStep implements RoutingRecord {
    private final int layers;
    private final int tokens;
    private final int topK;
    private final RoutingPhase phase;
    private final int[] ids; // [layers][tokens][topK], expert ids

    private RoutingStep(int layers, int tokens, int topK, RoutingPhase phase, int[] ids) {
        this.layers = layers;
        this.tokens = tokens;
        this.topK = topK;
        this.phase = phase;
        this.ids = ids;
    }

    /**
     * A step of {@code tokens} tokens with layer-major {@code ids} (copied).
     *
     * @throws IllegalArgumentException naming the layer, token and id when the shape or an id is wrong
     */
    public static RoutingStep of(RoutingTraceHeader header, RoutingPhase phase, int tokens, int[] ids) {
        String problem = check(header, tokens, ids);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        return new RoutingStep(header.layers(), tokens, header.topK(), phase, ids.clone());
    }

    /** Wraps {@code ids} without copying; the caller has checked them with {@link #check} and gives them up. */
    static RoutingStep adopt(RoutingTraceHeader header, RoutingPhase phase, int tokens, int[] ids) {
        return new RoutingStep(header.layers(), tokens, header.topK(), phase, ids);
    }

    /**
     * What is wrong with a step of {@code tokens} tokens and layer-major {@code ids} under
     * {@code header}, or null when nothing is: names the layer, token, slot and value.
     */
    static String check(RoutingTraceHeader header, int tokens, int[] ids) {
        if (tokens < 1) {
            return "a step needs at least one token, got " + tokens;
        }
        long expected = (long) header.layers() * tokens * header.topK();
        if (ids.length != expected) {
            return "a step of " + tokens + " tokens needs " + header.layers() + " layers × " + tokens + " tokens × top-"
                    + header.topK() + " = " + expected + " expert ids, got " + ids.length;
        }
        int k = header.topK();
        int experts = header.experts();
        for (int base = 0; base < ids.length; base += k) {
            for (int s = 0; s < k; s++) {
                int id = ids[base + s];
                if (id < 0 || id >= experts) {
                    int group = base / k;
                    return "expert id " + id + " at layer " + group / tokens + ", token " + group % tokens + ", slot " + s
                            + " is out of range: the layer has " + experts + " experts (ids 0.." + (experts - 1) + ")";
                }
                for (int p = 0; p < s; p++) {
                    if (ids[base + p] == id) {
                        int group = base / k;
                        return "expert id " + id + " appears twice in the top-" + k + " of layer " + group / tokens
                                + ", token " + group % tokens + " (slots " + p + " and " + s + ")";
                    }
                }
            }
        }
        return null;
    }

    /** MoE layers. */
    public int layers() {
        return layers;
    }

    /** Tokens in the batch. */
    public int tokens() {
        return tokens;
    }

    /** Experts per token per layer. */
    public int topK() {
        return topK;
    }

    /** The phase the recorder gave. */
    public RoutingPhase phase() {
        return phase;
    }

    /** The expert in {@code slot} of {@code token}'s top-k at {@code layer}. */
    public int expert(int layer, int token, int slot) {
        return ids[(layer * tokens + token) * topK + slot];
    }

    /** Every id, layer-major ({@code [layer][token][slot]}), a copy. */
    public int[] ids() {
        return ids.clone();
    }

    /** Copies layer {@code layer}'s ids ({@code tokens × topK}, token-major) into {@code dst} at {@code at}. */
    public void copyLayer(int layer, int[] dst, int at) {
        System.arraycopy(ids, layer * tokens * topK, dst, at, tokens * topK);
    }

    /** Ids in this step: {@code layers × tokens × topK}. */
    public int size() {
        return ids.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RoutingStep s && s.layers == layers && s.tokens == tokens && s.topK == topK && s.phase == phase
                && Arrays.equals(s.ids, ids);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(ids) * 31 + tokens;
    }

    @Override
    public String toString() {
        return "RoutingStep[" + phase.name().toLowerCase(java.util.Locale.ROOT) + ", " + tokens + " tokens × " + layers
                + " layers × top-" + topK + "]";
    }
}
