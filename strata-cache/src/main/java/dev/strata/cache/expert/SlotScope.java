package dev.strata.cache.expert;

/**
 * Where the slots an expert may occupy come from.
 *
 * <ul>
 *   <li>{@link #PER_LAYER}: each layer owns exactly {@code k} slots (the seed's scratch of
 *       {@code k} slots per layer); a miss in layer {@code l} evicts an expert of layer {@code l}.
 *       Simple and predictable, but a fixed split: a layer whose routing is spread out thrashes
 *       while a layer that routes to few experts leaves slots idle.</li>
 *   <li>{@link #SHARED}: one pool of {@code k × layers} slots for all layers (the same bytes); a
 *       miss evicts the policy's choice from any layer, so skewed layers take the slots they need.
 *       One layer may take up to {@code min(experts, k × layers)} slots.</li>
 * </ul>
 */
public enum SlotScope {
    PER_LAYER,
    SHARED
}
