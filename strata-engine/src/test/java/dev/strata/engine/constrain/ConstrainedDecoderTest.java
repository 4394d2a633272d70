package dev.strata.engine.constrain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A decoder over a vocabulary of single bytes and multi-byte pieces: its mask equals checking
 * every token's bytes against the grammar one by one, and decoding from random logits (a model
 * with random weights) always ends with a complete, valid value within the token budget.
 */
class ConstrainedDecoderTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] PIECES = {"{\"", "\":", "\",\"", "\"}", "true", "false", "null", "name", "age", "tags",
            "\"name\":\"", "\"age\":", " ", "\n", "é", "日本", "12", "0.", "e+", "],", "[\"", "\"]", "\\u00", "\\n", "ab", "\",",
            "<tool_call>", "</tool_call>", "city", "Oslo", "\"}}", "arguments"};

    /** Ids 0..255 the single bytes, then the pieces, then an id with no bytes, then the end id. */
    static TokenVocabulary vocabulary() {
        List<byte[]> b = new ArrayList<>();
        for (int i = 0; i < 256; i++) {
            b.add(new byte[] {(byte) i});
        }
        for (String p : PIECES) {
            b.add(p.getBytes(StandardCharsets.UTF_8));
        }
        b.add(null);
        b.add(null); // the end id
        return new TokenVocabulary(b.toArray(byte[][]::new));
    }

    @Test
    void theMaskIsExactlyTheTokensWhoseBytesTheGrammarAllowsAndDecodingAlwaysFinishesValid() throws Exception {
        TokenVocabulary v = vocabulary();
        int end = v.size() - 1;
        Schema validator = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(SchemaGrammarTest.PERSON);
        SchemaGrammar g = SchemaGrammar.of(JSON.readTree(SchemaGrammarTest.PERSON));
        SplittableRandom random = new SplittableRandom(11);
        for (int round = 0; round < 60; round++) {
            int budget = g.minLength() + random.nextInt(40); // tokens; the tightest leaves one byte per token
            ConstrainedDecoder d = new ConstrainedDecoder(g, v, new int[] {end}, budget);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            float[] logits = new float[v.size() + 3]; // padding rows beyond the vocabulary, as a model has
            boolean ended = false;
            for (int step = 0; step < budget; step++) {
                for (int i = 0; i < logits.length; i++) {
                    logits[i] = (float) (random.nextDouble() * 8);
                }
                float[] row = d.mask(logits);
                int best = -1;
                for (int id = 0; id < v.size(); id++) {
                    boolean finite = row[id] != Float.NEGATIVE_INFINITY;
                    assertThat(finite).as("id %d at step %d", id, step).isEqualTo(d.allows(id));
                    if (finite && (best < 0 || row[id] > row[best])) {
                        best = id;
                    }
                }
                d.accept(best);
                if (best == end) {
                    ended = true;
                    break;
                }
                out.writeBytes(v.bytes(best));
            }
            String text = SchemaGrammarTest.strictUtf8(out.toByteArray());
            assertThat(d.complete() || ended).as("complete within %d tokens: %s", budget, text).isTrue();
            JsonNode value = JSON.readTree(text);
            assertThat(validator.validate(value)).as(text).isEmpty();
        }
    }

    @Test
    void theEndIdIsAllowedOnlyOnceTheValueIsCompleteAndThenAlone() throws Exception {
        TokenVocabulary v = vocabulary();
        int end = v.size() - 1;
        SchemaGrammar g = SchemaGrammar.of(JSON.readTree("{\"type\":\"boolean\"}"));
        ConstrainedDecoder d = new ConstrainedDecoder(g, v, new int[] {end}, 10);
        float[] logits = new float[v.size()];
        assertThat(d.allows(end)).isFalse();
        assertThatThrownBy(() -> d.accept(end)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("before the output is complete");
        int trueId = 256 + List.of(PIECES).indexOf("true");
        assertThat(d.allows(trueId)).isTrue();
        assertThat(d.allows('x')).isFalse();
        assertThatThrownBy(() -> d.accept('x')).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not allowed");
        d.accept(trueId);
        float[] row = d.mask(logits);
        for (int id = 0; id < v.size(); id++) {
            assertThat(row[id] != Float.NEGATIVE_INFINITY).as("id %d", id).isEqualTo(id == end);
        }
    }

    @Test
    void masksAreSharedByRequestsOfTheSameGrammarAndNearTheBudgetTheWalkIsRedone() throws Exception {
        TokenVocabulary v = vocabulary();
        int end = v.size() - 1;
        SchemaGrammar g = SchemaGrammar.of(JSON.readTree("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"}},\"required\":[\"s\"]}"));
        float[] logits = new float[v.size()];
        ConstrainedDecoder first = new ConstrainedDecoder(g, v, new int[] {end}, 100);
        first.mask(logits);
        assertThat(first.walks()).isEqualTo(1);
        ConstrainedDecoder second = new ConstrainedDecoder(g, v, new int[] {end}, 100);
        second.mask(logits);
        assertThat(second.walks()).as("the first request's mask is reused").isZero();
        // after {"s":"a (7 tokens of 9) one more token may leave one: the closing quote, or quote and brace
        ConstrainedDecoder tight = new ConstrainedDecoder(g, v, new int[] {end}, 9);
        for (byte b : "{\"s\":\"a".getBytes(StandardCharsets.UTF_8)) {
            tight.accept(b);
        }
        float[] row = tight.mask(logits);
        assertThat(tight.walks()).as("a new state: its mask is walked and cached, then walked again within the budget").isEqualTo(2);
        for (int id = 0; id < v.size(); id++) {
            byte[] b = v.bytes(id);
            String t = b == null ? "" : new String(b, StandardCharsets.UTF_8);
            // the quote; quote and brace; or one more plain character and the quote (as {" or [")
            boolean expected = t.equals("\"") || t.equals("\"}")
                    || t.length() == 2 && t.charAt(1) == '"' && t.charAt(0) >= 0x20 && t.charAt(0) != '"' && t.charAt(0) != '\\';
            assertThat(row[id] != Float.NEGATIVE_INFINITY).as("id %d %s", id, t).isEqualTo(expected);
        }
    }

    @Test
    void plainTokensAreWholeCharactersAStringCanHoldAsTheyAre() {
        assertThat(TokenVocabulary.plainStringChars("é".getBytes(StandardCharsets.UTF_8))).isEqualTo(1);
        assertThat(TokenVocabulary.plainStringChars(" 日本".getBytes(StandardCharsets.UTF_8))).isEqualTo(3);
        assertThat(TokenVocabulary.plainStringChars("😀".getBytes(StandardCharsets.UTF_8))).isEqualTo(1);
        assertThat(TokenVocabulary.plainStringChars("a\"".getBytes(StandardCharsets.UTF_8))).as("quote").isZero();
        assertThat(TokenVocabulary.plainStringChars("\\n".getBytes(StandardCharsets.UTF_8))).as("backslash").isZero();
        assertThat(TokenVocabulary.plainStringChars("a\n".getBytes(StandardCharsets.UTF_8))).as("control").isZero();
        assertThat(TokenVocabulary.plainStringChars(new byte[] {(byte) 0xE6, (byte) 0x97})).as("cut character").isZero();
        assertThat(TokenVocabulary.plainStringChars(new byte[] {(byte) 0x97})).as("continuation alone").isZero();
        assertThat(TokenVocabulary.plainStringChars(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80})).as("surrogate").isZero();
        assertThat(TokenVocabulary.plainStringChars(new byte[] {(byte) 0xC0, (byte) 0x80})).as("overlong").isZero();
    }
}
