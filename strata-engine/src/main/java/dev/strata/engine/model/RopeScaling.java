package dev.strata.engine.model;

/**
 * The subset of {@code rope_scaling} Strata supports. {@code rope_type} (or the older {@code type})
 * must be one of:
 * <ul>
 *   <li>{@code default}: no scaling (same as {@code rope_scaling: null});</li>
 *   <li>{@code linear}: positions divided by {@code factor};</li>
 *   <li>{@code llama3}: Llama 3.1's frequency-dependent scaling with {@code factor},
 *       {@code low_freq_factor}, {@code high_freq_factor} and
 *       {@code original_max_position_embeddings}.</li>
 * </ul>
 * Others ({@code dynamic}, {@code yarn}, {@code longrope}, ...) are refused by name when the
 * config is read. Immutable.
 *
 * @param type                          "default", "linear" or "llama3"
 * @param factor                        scale factor (1 for default)
 * @param lowFreqFactor                 llama3 only, else 0
 * @param highFreqFactor                llama3 only, else 0
 * @param originalMaxPositionEmbeddings llama3 only, else 0
 */
public record RopeScaling(String type, double factor, double lowFreqFactor, double highFreqFactor,
                          int originalMaxPositionEmbeddings) {
}
