package dev.strata.engine.synth;

import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.tokenizer.PreTokenizer;
import java.util.List;

/**
 * The kind of tokenizer, special tokens, bos/eos and split regex a synthetic tokenizer gets for
 * each family, as the family's real tokenizer has them: Qwen3, Llama 3 and OLMoE byte-level BPE
 * with their split regex; Mixtral SentencePiece-style BPE in the Llama 2 layout with
 * {@code <unk>}, {@code <s>}, {@code </s>} as ids 0, 1, 2. Immutable.
 *
 * @param specials      special token strings: after the learned vocabulary in this order (byte-level),
 *                      or ids 0.. in this order (SentencePiece-style)
 * @param bos           bos token string, or null
 * @param eos           eos token string
 * @param extraEos      further end-of-sequence tokens (Llama 3's {@code <|eot_id|>})
 * @param regex         split regex (byte-level), or null
 * @param sentencePiece whether the tokenizer is SentencePiece-style (its unknown token is the first special)
 */
record FamilyTokens(List<String> specials, String bos, String eos, List<String> extraEos, String regex, boolean sentencePiece) {

    static FamilyTokens of(ModelFamily family) {
        return switch (family) {
            case QWEN3_MOE, QWEN3 -> new FamilyTokens(List.of("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"),
                    null, "<|im_end|>", List.of("<|endoftext|>"), PreTokenizer.QWEN2, false);
            case LLAMA -> new FamilyTokens(List.of("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                    "<|end_header_id|>", "<|eot_id|>"), "<|begin_of_text|>", "<|end_of_text|>", List.of("<|eot_id|>"),
                    PreTokenizer.LLAMA3, false);
            case MIXTRAL -> new FamilyTokens(List.of("<unk>", "<s>", "</s>"), "<s>", "</s>", List.of(), null, true);
            case OLMOE -> new FamilyTokens(List.of("<|endoftext|>", "<|padding|>"), null, "<|endoftext|>", List.of(),
                    PreTokenizer.LLAMA3, false);
        };
    }

    /** Whether a special is "special" (skipped by decoding) rather than an ordinary added token. */
    static boolean skippable(String token) {
        return !token.equals("<think>") && !token.equals("</think>");
    }
}
