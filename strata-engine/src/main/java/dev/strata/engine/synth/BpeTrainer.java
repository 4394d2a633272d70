package dev.strata.engine.synth;

import dev.strata.engine.tokenizer.ByteLevel;
import dev.strata.engine.tokenizer.PreTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Learns BPE merges from text, of either kind Strata reads. Byte-level ({@link #train}): the text
 * is split by the pre-tokenizer, each distinct piece becomes a sequence of byte symbols weighted
 * by its count, and the vocabulary starts with the 256 byte symbols in byte order.
 * SentencePiece-style ({@link #trainSentencePiece}): the text is normalized as Llama 2 does
 * ("▁" in front, every space "▁") and cut before each "▁" into words, each word's symbols are its
 * characters, and the vocabulary starts with the special tokens, the 256 {@code <0xNN>} byte
 * tokens and the most frequent characters (at most half of the room left; rarer characters are
 * left to byte fallback and never merged). Then, shared by both, until the vocabulary reaches its
 * target size, the most frequent adjacent pair (ties broken by the smaller pair in string order, so
 * training is deterministic) is merged everywhere and recorded as the next merge. Pairs seen fewer
 * than twice are not merged. Stateless; any thread.
 */
public final class BpeTrainer {
    /** Stands for a character outside the vocabulary (a noncharacter, never in text): never part of a pair. */
    private static final String NOT_MERGED = "\uFFFF";

    /** Learned vocabulary (token string → id, ids dense from 0) and merges by rank. */
    public record Result(Map<String, Integer> vocab, List<String[]> merges) {
    }

    private BpeTrainer() {
    }

    /** Trains until {@code vocabSize} tokens (at least 256) or no pair repeats. */
    public static Result train(String text, PreTokenizer pre, int vocabSize) {
        if (vocabSize < 256) {
            throw new IllegalArgumentException("a byte-level vocabulary needs at least 256 tokens, got " + vocabSize);
        }
        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (int b = 0; b < 256; b++) {
            vocab.put(String.valueOf(ByteLevel.charOf(b)), b);
        }
        Map<String, Integer> counts = new TreeMap<>();
        for (String piece : pre.split(text)) {
            counts.merge(piece, 1, Integer::sum);
        }
        List<List<String>> words = new ArrayList<>();
        List<Integer> weights = new ArrayList<>();
        for (var e : counts.entrySet()) {
            byte[] bytes = e.getKey().getBytes(StandardCharsets.UTF_8);
            List<String> syms = new ArrayList<>();
            for (byte b : bytes) {
                syms.add(String.valueOf(ByteLevel.charOf(b)));
            }
            words.add(syms);
            weights.add(e.getValue());
        }
        return new Result(vocab, learn(words, weights, vocab, vocabSize));
    }

    /**
     * Trains a SentencePiece-style vocabulary until {@code vocabSize} tokens or no pair repeats:
     * {@code specials} take ids 0.., then {@code <0x00>}..{@code <0xFF>}, then characters, then merges.
     */
    public static Result trainSentencePiece(String text, List<String> specials, int vocabSize) {
        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (String s : specials) {
            vocab.put(s, vocab.size());
        }
        for (int b = 0; b < 256; b++) {
            vocab.put(String.format("<0x%02X>", b), vocab.size());
        }
        if (vocabSize < vocab.size()) {
            throw new IllegalArgumentException("a SentencePiece-style vocabulary with " + specials.size()
                    + " special tokens needs at least " + vocab.size() + " tokens, got " + vocabSize);
        }
        String normalized = "▁" + text.replace(' ', '▁');
        Map<String, Integer> counts = new TreeMap<>();
        int start = 0;
        for (int i = 1; i <= normalized.length(); i++) {
            if (i == normalized.length() || normalized.charAt(i) == '▁') {
                counts.merge(normalized.substring(start, i), 1, Integer::sum);
                start = i;
            }
        }
        Map<String, Long> chars = new TreeMap<>();
        counts.forEach((w, c) -> w.codePoints().forEach(cp -> chars.merge(Character.toString(cp), (long) c, Long::sum)));
        List<Map.Entry<String, Long>> byUse = new ArrayList<>(chars.entrySet());
        byUse.sort(Map.Entry.<String, Long>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()));
        int alphabet = Math.min(byUse.size(), (vocabSize - vocab.size()) / 2);
        for (int i = 0; i < alphabet; i++) {
            vocab.put(byUse.get(i).getKey(), vocab.size());
        }
        List<List<String>> words = new ArrayList<>();
        List<Integer> weights = new ArrayList<>();
        for (var e : counts.entrySet()) {
            List<String> syms = new ArrayList<>();
            e.getKey().codePoints().forEach(cp -> {
                String c = Character.toString(cp);
                syms.add(vocab.containsKey(c) ? c : NOT_MERGED);
            });
            words.add(syms);
            weights.add(e.getValue());
        }
        return new Result(vocab, learn(words, weights, vocab, vocabSize));
    }

    /** The shared loop: merges the most frequent pair of {@code words} into {@code vocab} until it has {@code vocabSize} tokens. */
    private static List<String[]> learn(List<List<String>> words, List<Integer> weights, Map<String, Integer> vocab, int vocabSize) {
        List<String[]> merges = new ArrayList<>();
        while (vocab.size() < vocabSize) {
            Map<String, long[]> pairs = new HashMap<>(); // "a\u0000b" -> count
            for (int w = 0; w < words.size(); w++) {
                List<String> s = words.get(w);
                for (int i = 0; i + 1 < s.size(); i++) {
                    if (s.get(i).equals(NOT_MERGED) || s.get(i + 1).equals(NOT_MERGED)) {
                        continue;
                    }
                    pairs.computeIfAbsent(s.get(i) + '\u0000' + s.get(i + 1), k -> new long[1])[0] += weights.get(w);
                }
            }
            String best = null;
            long bestCount = 1;
            for (var e : pairs.entrySet()) {
                long c = e.getValue()[0];
                if (c > bestCount || (c == bestCount && best != null && c > 1 && e.getKey().compareTo(best) < 0)) {
                    best = e.getKey();
                    bestCount = c;
                }
            }
            if (best == null) {
                break;
            }
            int sep = best.indexOf('\u0000');
            String a = best.substring(0, sep);
            String b = best.substring(sep + 1);
            String ab = a + b;
            merges.add(new String[] {a, b});
            vocab.putIfAbsent(ab, vocab.size());
            for (List<String> s : words) {
                for (int i = 0; i + 1 < s.size(); i++) {
                    if (s.get(i).equals(a) && s.get(i + 1).equals(b)) {
                        s.set(i, ab);
                        s.remove(i + 1);
                    }
                }
            }
        }
        return merges;
    }
}
