package dev.strata.engine.tokenizer;

/**
 * A token matched in the text before BPE and never split: control tokens such as
 * {@code <|im_end|>} ({@code special}) and other added tokens such as {@code <think>}.
 * Immutable.
 *
 * @param id         token id
 * @param content    the exact text matched
 * @param special    whether decoding may skip it
 * @param normalized whether a SentencePiece-style tokenizer matches it, by its normalized content,
 *                   in normalized text rather than in the raw text (byte-level tokenizers match
 *                   every added token in the raw text)
 */
public record AddedToken(int id, String content, boolean special, boolean normalized) {

    /** An added token matched in the raw text. */
    public AddedToken(int id, String content, boolean special) {
        this(id, content, special, false);
    }
}
