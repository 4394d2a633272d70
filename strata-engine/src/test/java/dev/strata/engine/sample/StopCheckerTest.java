package dev.strata.engine.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.engine.tokenizer.AddedToken;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.ByteLevel;
import dev.strata.engine.tokenizer.PreTokenizer;
import dev.strata.testing.Property;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StopCheckerTest {
    /** Byte tokens have id = byte value; then multi-character tokens and an end-of-sequence token. */
    private static final int XA = 256;
    private static final int BC = 257;
    private static final int AB = 258;
    private static final int EOS = 259;
    private static final BpeTokenizer TOK = tokenizer();

    private static BpeTokenizer tokenizer() {
        Map<String, Integer> vocab = new HashMap<>();
        for (int b = 0; b < 256; b++) {
            vocab.put(String.valueOf(ByteLevel.charOf(b)), b);
        }
        vocab.put("xa", XA);
        vocab.put("bc", BC);
        vocab.put("ab", AB);
        List<String[]> merges = List.of(new String[] {"x", "a"}, new String[] {"b", "c"}, new String[] {"a", "b"});
        return new BpeTokenizer(vocab, merges, List.of(new AddedToken(EOS, "<eos>", true)), PreTokenizer.none(), false, false);
    }

    private static StopChecker checker(int maxTokens, String... stops) {
        SamplingParams p = SamplingParams.builder().maxTokens(maxTokens).stop(List.of(stops)).stopTokenIds(List.of(EOS)).build();
        return new StopChecker(p, TOK.streamDecoder(true));
    }

    private static int[] bytes(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            ids[i] = b[i] & 0xFF;
        }
        return ids;
    }

    /** Pushes until finished; returns all text released. */
    private static String run(StopChecker c, int... ids) {
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            if (c.isFinished()) {
                break;
            }
            out.append(c.push(id));
        }
        return out.toString();
    }

    @Test
    void stopStringSpanningTokensIsCutAndHeldTextNeverLeaks() {
        StopChecker c = checker(100, "ab");
        assertThat(c.push(XA)).isEqualTo("x");
        assertThat(c.heldText()).isEqualTo("a");
        assertThat(c.isFinished()).isFalse();
        assertThat(c.push(BC)).isEmpty();
        assertThat(c.isFinished()).isTrue();
        assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(c.finishReason().openAiName()).isEqualTo("stop");
        assertThat(c.generated()).isEqualTo(2);
        assertThatThrownBy(() -> c.push('q'))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("token 113 pushed after the request finished with 'stop' at 2 tokens");
    }

    @Test
    void overlappingCandidatesTheFirstCompletedWins() {
        assertThat(run(checker(100, "abc", "ab"), bytes("xabcd"))).isEqualTo("x");
        assertThat(run(checker(100, "ab", "abc"), XA, BC)).isEqualTo("x");
        // "bc" completes before "abcd" does, although "abcd" starts earlier.
        assertThat(run(checker(100, "abcd", "bc"), bytes("abcd"))).isEqualTo("a");
        // The same when both complete within one token: the result does not depend on tokenization.
        assertThat(run(checker(100, "abcd", "bc"), 'a', BC, 'd')).isEqualTo("a");
        // "abc" alone does not stop on "abd": the held "ab" is released with the "d".
        StopChecker c = checker(100, "abc");
        assertThat(run(c, bytes("zab"))).isEqualTo("z");
        assertThat(c.heldText()).isEqualTo("ab");
        assertThat(c.push('d')).isEqualTo("abd");
        assertThat(c.isFinished()).isFalse();
    }

    @Test
    void heldTextIsReleasedWhenTheCandidateFails() {
        StopChecker c = checker(100, "hello", "lp!");
        assertThat(c.push('h')).isEmpty();
        assertThat(c.push('e')).isEmpty();
        assertThat(c.push('l')).isEmpty();
        assertThat(c.heldText()).isEqualTo("hel");
        assertThat(c.push('p')).as("'hel' fails, 'lp' may still become 'lp!'").isEqualTo("he");
        assertThat(c.heldText()).isEqualTo("lp");
        assertThat(c.push('?')).isEqualTo("lp?");
        assertThat(c.heldText()).isEmpty();
    }

    @Test
    void multiByteCharactersSplitAcrossTokens() {
        // The stop string begins with a 3-byte character whose bytes arrive as three tokens.
        StopChecker c = checker(100, "€!");
        int[] euro = bytes("€");
        assertThat(c.push('a')).isEqualTo("a");
        assertThat(c.push(euro[0])).isEmpty();
        assertThat(c.push(euro[1])).isEmpty();
        assertThat(c.push(euro[2])).isEmpty();
        assertThat(c.heldText()).isEqualTo("€");
        assertThat(c.push('!')).isEmpty();
        assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        // A 4-byte character that is not a stop string comes out whole once complete.
        StopChecker d = checker(100, "😀x");
        int[] grin = bytes("🙂");
        assertThat(run(d, grin[0], grin[1], grin[2])).isEmpty();
        assertThat(d.push(grin[3])).as("'🙂' shares its high surrogate with '😀' but is no prefix of '😀x'").isEqualTo("🙂");
        assertThat(d.heldText()).isEmpty();
        // A stop string ending in a character split across tokens.
        assertThat(run(checker(100, "é"), bytes("café au lait"))).isEqualTo("caf");
    }

    @Test
    void incompleteCharacterReleasedAsReplacementAtLength() {
        int[] euro = bytes("€");
        StopChecker c = checker(3, "zz");
        assertThat(c.push('z')).isEmpty();
        assertThat(c.push(euro[0])).as("'z' still held: the next character is not known yet").isEmpty();
        assertThat(c.heldText()).isEqualTo("z");
        assertThat(c.push(euro[1])).isEqualTo("z" + TOK.decode(new int[] {euro[0], euro[1]}));
        assertThat(TOK.decode(new int[] {euro[0], euro[1]})).isEqualTo("\uFFFD");
        assertThat(c.finishReason()).isEqualTo(FinishReason.LENGTH);
    }

    @Test
    void maxTokensGivesLengthAndReleasesHeldText() {
        StopChecker c = checker(3, "zz");
        assertThat(c.push('a')).isEqualTo("a");
        assertThat(c.push('z')).isEmpty();
        assertThat(c.isFinished()).isFalse();
        assertThat(c.push('b')).isEqualTo("zb");
        assertThat(c.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(c.finishReason().openAiName()).isEqualTo("length");
        StopChecker h = checker(2, "zz");
        assertThat(run(h, 'a', 'z')).isEqualTo("az");
        assertThat(h.finishReason()).isEqualTo(FinishReason.LENGTH);
        // A stop string completed by the last allowed token is a stop, not length.
        StopChecker s = checker(2, "zz");
        assertThat(run(s, 'z', 'z')).isEmpty();
        assertThat(s.finishReason()).isEqualTo(FinishReason.STOP);
        StopChecker one = checker(1);
        assertThat(one.push(AB)).isEqualTo("ab");
        assertThat(one.finishReason()).isEqualTo(FinishReason.LENGTH);
    }

    @Test
    void stopTokenEndsWithoutItsTextAndReleasesHeldText() {
        StopChecker c = checker(100, "zz");
        assertThat(c.push('a')).isEqualTo("a");
        assertThat(c.push('z')).isEmpty();
        assertThat(c.push(EOS)).isEqualTo("z");
        assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(c.generated()).isEqualTo(2 + 1);
        // The stop token wins over max_tokens when both fall on the same token.
        StopChecker d = checker(2);
        d.push('a');
        assertThat(d.push(EOS)).isEmpty();
        assertThat(d.finishReason()).isEqualTo(FinishReason.STOP);
    }

    @Test
    void flushReleasesHeldTextWithoutAFinishReason() {
        StopChecker c = checker(100, "abc");
        int[] euro = bytes("€");
        run(c, 'a', 'b');
        assertThat(c.flush()).isEqualTo("ab");
        StopChecker d = checker(100, "abc");
        run(d, 'q', euro[0]);
        assertThat(d.flush()).isEqualTo("\uFFFD");
        assertThat(d.finishReason()).isNull();
    }

    /**
     * Against a character-at-a-time reference: the text released is the full decode cut before the
     * stop-string occurrence that ends first (earliest start on equal ends), whatever the token
     * boundaries; without one it is the whole decode and the reason is "length".
     */
    @Test
    void releasedTextMatchesTheCharacterLevelReference() {
        String[] pieces = {"a", "b", "c", "ab", "é", "€", "🙂"};
        Property.forAll("stop strings", 500, r -> {
            List<Integer> ids = new ArrayList<>();
            int n = 1 + r.nextInt(30);
            while (ids.size() < n) {
                int kind = r.nextInt(6);
                if (kind == 0) {
                    ids.add(new int[] {XA, BC, AB}[r.nextInt(3)]);
                } else {
                    for (int b : bytes(pieces[r.nextInt(pieces.length)])) {
                        ids.add(b);
                    }
                }
            }
            int[] all = ids.stream().mapToInt(Integer::intValue).toArray();
            List<String> stops = new ArrayList<>();
            int m = r.nextInt(4);
            for (int i = 0; i < m; i++) {
                StringBuilder s = new StringBuilder();
                int len = 1 + r.nextInt(4);
                for (int j = 0; j < len; j++) {
                    s.append(pieces[r.nextInt(pieces.length)]);
                }
                stops.add(s.toString());
            }
            String full = TOK.decode(all);
            int cut = -1;
            int cutEnd = -1;
            for (String s : stops) {
                int at = full.indexOf(s);
                if (at >= 0 && (cut < 0 || at + s.length() < cutEnd || at + s.length() == cutEnd && at < cut)) {
                    cut = at;
                    cutEnd = at + s.length();
                }
            }
            StopChecker c = new StopChecker(SamplingParams.builder().maxTokens(all.length).stop(stops).build(),
                    TOK.streamDecoder(true));
            StringBuilder out = new StringBuilder();
            for (int id : all) {
                if (c.isFinished()) {
                    break;
                }
                out.append(c.push(id));
                assertThat(full).as("released text is a prefix of the decode").startsWith(out);
                if (cut >= 0) {
                    assertThat(out.length()).as("never past the stop string").isLessThanOrEqualTo(cut);
                }
            }
            assertThat(c.isFinished()).isTrue();
            assertThat(out.toString()).as("stops %s over %s", stops, full).isEqualTo(cut >= 0 ? full.substring(0, cut) : full);
            assertThat(c.finishReason()).isEqualTo(cut >= 0 ? FinishReason.STOP : FinishReason.LENGTH);
        });
    }
}
