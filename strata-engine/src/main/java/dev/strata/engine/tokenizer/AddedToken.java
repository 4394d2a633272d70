package dev.strata.engine.tokenizer;

/**
 * A token matched in the text before BPE and never split: control tokens such as
 * {@code <|im_end|>} ({@code special}) and other added tokens such as {@code <think>}.
 * Immutable.
 *
 * @param id      token id
 * @param content the exact text matched
 * @param special whether decoding may skip it
 */
public record AddedToken(int id, String content, boolean special) {
}
