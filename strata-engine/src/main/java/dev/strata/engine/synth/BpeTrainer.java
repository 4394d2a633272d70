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
 * Learns byte-level BPE merges from text: the text is split by the pre-tokenizer, each distinct
 * piece becomes a sequence of byte symbols weighted by its count, and then, until the vocabulary
 * reaches its target size, the most frequent adjacent pair (ties broken by the smaller pair in
 * string order, so training is deterministic) is merged everywhere and recorded as the next merge.
 * Pairs seen fewer than twice are not merged. The vocabulary starts with the 256 byte symbols in
 * byte order. Not thread-safe: one training per instance, on one thread.
 */
public final class BpeTrainer {

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
        List<String[]> merges = new ArrayList<>();
        while (vocab.size() < vocabSize) {
            Map<String, long[]> pairs = new HashMap<>(); // "a\u0000b" -> count
            for (int w = 0; w < words.size(); w++) {
                List<String> s = words.get(w);
                for (int i = 0; i + 1 < s.size(); i++) {
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
        return new Result(vocab, merges);
    }
}
