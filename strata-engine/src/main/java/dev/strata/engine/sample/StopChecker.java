package dev.strata.engine.sample;

import dev.strata.engine.tokenizer.StreamDecoder;
import java.util.Arrays;
import java.util.List;

/**
 * Decides when one request stops and which text its user receives, token by token.
 *
 * <p>Design note: tokens are decoded with a {@link StreamDecoder} (which holds back a UTF-8
 * character split across tokens); the decoded text is then screened for stop strings. A stop
 * string may span tokens, so the longest suffix of the unreleased text that is a proper prefix of
 * some stop string is held back until it either completes a stop string (generation stops and the
 * text before the stop string is released; the stop string and everything after it never are) or
 * can no longer become one (it is released). When several stop strings occur, the one that is
 * completed first in the text wins (earliest end, then earliest start), exactly as if the text
 * arrived one character at a time: the result never depends on how the text was split into
 * tokens. So stops "ab" and "abc" on "xabc" release "x", and stops "abcd" and "bc" on "abcd"
 * release "a". Since every position before the held suffix can start no stop string, no text is
 * released that a later token could have turned into a stop string. Checks per token, in order:
 * <ol>
 *   <li>a stop token id ends generation with {@link FinishReason#STOP}; its text is not returned,
 *       held text is released (held incomplete UTF-8 bytes become U+FFFD);</li>
 *   <li>the token's text is screened for stop strings ({@link FinishReason#STOP});</li>
 *   <li>when this was the {@code max_tokens}-th token, generation ends with
 *       {@link FinishReason#LENGTH} and all held text is released.</li>
 * </ol>
 * Cost per token: O(held + new text) times the number of stop strings; the held text is shorter
 * than the longest stop string (plus at most 3 bytes in the decoder).
 *
 * <p>Invariants: the concatenation of all text returned is a prefix of the full decode of the
 * tokens given and never reaches into the first completed stop string; after a finish it equals
 * the full decode cut before that stop string (or the decode of the tokens before the stop token,
 * or of all tokens at {@code max_tokens}).
 *
 * <p>Threads: one request's checker, used by one thread at a time.
 */
public final class StopChecker {
    private final StreamDecoder decoder;
    private final List<String> stops;
    private final int[] stopTokenIds;      // sorted ascending, for binary search
    private final int maxTokens;
    private final StringBuilder held = new StringBuilder(); // decoded text not yet released
    private int generated;                 // tokens pushed so far
    private FinishReason finishReason;     // null while generating

    /**
     * A checker for one request: {@code decoder} must be fresh (nothing pushed) and is owned by
     * this checker from now on.
     */
    public StopChecker(SamplingParams params, StreamDecoder decoder) {
        if (params == null || decoder == null) {
            throw new IllegalArgumentException("params and decoder must not be null, got " + params + ", " + decoder);
        }
        this.decoder = decoder;
        this.stops = params.stop();
        this.stopTokenIds = params.stopTokenIds().stream().mapToInt(Integer::intValue).sorted().toArray();
        this.maxTokens = params.maxTokens();
    }

    /**
     * Accepts the next generated token and returns the text the user may now see (possibly
     * empty). After it returns, {@link #isFinished()} tells whether generation must stop.
     *
     * @throws IllegalStateException when generation has already finished
     */
    public String push(int token) {
        if (finishReason != null) {
            throw new IllegalStateException("token " + token + " pushed after the request finished with '"
                    + finishReason.openAiName() + "' at " + generated + " tokens");
        }
        generated++;
        if (Arrays.binarySearch(stopTokenIds, token) >= 0) {
            finishReason = FinishReason.STOP;
            return releaseAll();
        }
        held.append(decoder.push(token));
        String out = screen(false);
        if (finishReason == null && generated >= maxTokens) {
            finishReason = FinishReason.LENGTH;
            return out + releaseAll();
        }
        return out;
    }

    /**
     * Ends generation early for a reason outside this checker (the context is full, the request
     * was cancelled) and returns the held text, screened once more for stop strings; the finish
     * reason stays null unless that screening finds one. Returns "" when already finished.
     */
    public String flush() {
        if (finishReason != null) {
            return "";
        }
        return releaseAll();
    }

    /** True when {@code token} is one of the stop token ids (its text is never returned). */
    public boolean isStopToken(int token) {
        return Arrays.binarySearch(stopTokenIds, token) >= 0;
    }

    /** True once a stop condition has been met; no more tokens may be pushed. */
    public boolean isFinished() {
        return finishReason != null;
    }

    /** The finish reason, or null while generating. */
    public FinishReason finishReason() {
        return finishReason;
    }

    /** The tokens pushed so far, the stop token included (the OpenAI completion_tokens count). */
    public int generated() {
        return generated;
    }

    /** The text held back as a possible start of a stop string (for tests and diagnostics). */
    public String heldText() {
        return held.toString();
    }

    /**
     * Ends the stream: the decoder's held bytes (replacement characters) join the held text,
     * which is screened once more (a stop string may end in U+FFFD) and then released in full.
     */
    private String releaseAll() {
        held.append(decoder.finish());
        return screen(true);
    }

    /**
     * Finds the earliest stop string in the held text: if found, releases the text before it,
     * drops the rest and finishes with {@link FinishReason#STOP}. Otherwise releases everything at
     * the end of the stream, or else all but the longest suffix that is a proper prefix of a stop
     * string.
     */
    private String screen(boolean atEnd) {
        int first = -1;        // start of the chosen occurrence
        int firstEnd = -1;     // its end (exclusive)
        for (String stop : stops) {
            int at = held.indexOf(stop);
            int end = at + stop.length();
            if (at >= 0 && (first < 0 || end < firstEnd || end == firstEnd && at < first)) {
                first = at;
                firstEnd = end;
            }
        }
        if (first >= 0) {
            String s = held.substring(0, first);
            held.setLength(0);
            finishReason = FinishReason.STOP;
            return s;
        }
        int keep = 0;
        if (!atEnd) {
            for (String stop : stops) {
                keep = Math.max(keep, longestSuffixPrefix(held, stop));
            }
        }
        String s = held.substring(0, held.length() - keep);
        held.delete(0, held.length() - keep);
        return s;
    }

    /** The length of the longest suffix of {@code text} that is a proper prefix of {@code stop}. */
    static int longestSuffixPrefix(CharSequence text, String stop) {
        int max = Math.min(text.length(), stop.length() - 1);
        for (int len = max; len > 0; len--) {
            int from = text.length() - len;
            boolean match = true;
            for (int i = 0; i < len; i++) {
                if (text.charAt(from + i) != stop.charAt(i)) {
                    match = false;
                    break;
                }
            }
            if (match) {
                return len;
            }
        }
        return 0;
    }
}
