package dev.strata.engine.synth;

import dev.strata.engine.tokenizer.BpeTokenizer;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The bigram language model of {@link TextSample} over a trained vocabulary: which token follows
 * which when the sample is tokenized, as a score per (current token, next token) pair that the
 * synthesizer writes into the LM head.
 *
 * <p>Design: the sample is tokenized topic by topic ({@link BpeTokenizer#encodeOrdinary}), and
 * each token u gets one successor: the token after u's last occurrence, among occurrences whose
 * next token is another token (never u itself, which would repeat forever) and readable (its
 * bytes alone are valid UTF-8 with no control character other than a line break: a piece of a
 * multi-byte character, a special token or an empty token never is). That pair scores
 * {@link #SCORE}; every other pair scores 0. Greedy decoding along the table therefore never
 * emits a replacement character or a control byte, and it replays the sample forwards: the token
 * it lands on occurs at that position or later, so its own last occurrence is not earlier, and the
 * walk moves on through the text (skipping ahead at repeated tokens); near the end of the sample
 * it falls into a loop over a stretch of it, typically a sentence. One pair per token also keeps the LM head's cross-talk between
 * tokens low (it grows with the pairs a row carries).
 *
 * <p>Immutable after {@link #of}; any thread.
 */
final class SampleBigrams {
    /** Score of a token's successor (a logit, in nats above a token that does not follow it). */
    static final float SCORE = 8f;

    private final int[][] predecessors; // [v][k]: the k-th token u whose successor is v; v below the tokenizer's size

    private SampleBigrams(int[][] predecessors) {
        this.predecessors = predecessors;
    }

    /** The sample's bigrams over {@code tok}'s vocabulary. */
    static SampleBigrams of(BpeTokenizer tok) {
        int n = tok.size();
        boolean[] readable = new boolean[n];
        for (int id = 0; id < n; id++) {
            readable[id] = !tok.isSpecial(id) && readable(tok.decodeBytes(new int[] {id}, false));
        }
        int[] next = new int[n]; // [u]: the token after u's last occurrence followed by another readable token, or -1
        Arrays.fill(next, -1);
        for (TextSample.Topic topic : TextSample.topics()) {
            int[] ids = tok.encodeOrdinary(topic.text());
            for (int i = 0; i + 1 < ids.length; i++) {
                if (readable[ids[i + 1]] && ids[i + 1] != ids[i]) {
                    next[ids[i]] = ids[i + 1];
                }
            }
        }
        List<List<Integer>> preds = new ArrayList<>(); // [v]: the tokens u whose successor is v
        for (int v = 0; v < n; v++) {
            preds.add(new ArrayList<>());
        }
        for (int u = 0; u < n; u++) {
            if (next[u] >= 0) {
                preds.get(next[u]).add(u);
            }
        }
        int[][] p = new int[n][];
        for (int v = 0; v < n; v++) {
            p[v] = preds.get(v).stream().mapToInt(Integer::intValue).toArray();
        }
        return new SampleBigrams(p);
    }

    /** Token ids the table covers: the tokenizer's size. */
    int size() {
        return predecessors.length;
    }

    /** The tokens whose successor is {@code v} (ids below {@link #size}), each scoring {@link #SCORE}; empty for none. */
    int[] predecessors(int v) {
        return predecessors[v].clone();
    }

    /** Whether {@code bytes} are non-empty, valid UTF-8 and free of control characters other than a line break. */
    static boolean readable(byte[] bytes) {
        if (bytes.length == 0) {
            return false;
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return false;
        }
        return text.codePoints().noneMatch(cp -> cp != '\n' && (Character.isISOControl(cp) || cp == 0xFFFD
                || Character.getType(cp) == Character.UNASSIGNED || Character.getType(cp) == Character.FORMAT));
    }
}
