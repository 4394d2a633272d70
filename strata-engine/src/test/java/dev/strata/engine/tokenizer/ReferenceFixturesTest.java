package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Compares Strata's tokenizer with the Hugging Face reference on the fixtures of
 * {@code src/test/fixtures/tokenizers} (tokenizer files and the ids and texts the reference
 * produced for them; {@code generate.py} there regenerates both): every case's ids, with and
 * without the post-processor's special tokens, and every decode, keeping and skipping special
 * tokens, must be identical; streaming the ids must give the same text.
 */
class ReferenceFixturesTest {
    private static final Path DIR = Path.of("src/test/fixtures/tokenizers");
    private static final ObjectMapper JSON = new ObjectMapper();

    @ParameterizedTest
    @CsvSource({"llama2-style, false, true", "mistral-v03-style, false, true", "metaspace-split-style, false, false",
            "partial-bytes-style, false, true", "unk-without-fallback-style, false, true", "normalized-added-style, false, true",
            "qwen2-byte-level, true, false"})
    void encodesAndDecodesAsTheReference(String name, boolean byteLevel, boolean addsBos) throws Exception {
        BpeTokenizer tok = BpeTokenizer.read(DIR.resolve(name + ".tokenizer.json"));
        JsonNode expected = JSON.readTree(Files.readString(DIR.resolve(name + ".expected.json")));
        assertThat(tok.isByteLevel()).isEqualTo(byteLevel);
        assertThat(tok.addsBos()).isEqualTo(addsBos);
        assertThat(expected.get("cases").size()).isGreaterThanOrEqualTo(25);
        for (JsonNode c : expected.get("cases")) {
            String text = c.get("text").asText();
            int[] withSpecial = ids(c.get("ids_with_special"));
            assertThat(tok.encode(text)).as("%s: ids of %s", name, text).containsExactly(ids(c.get("ids")));
            assertThat(tok.encodeWithSpecialTokens(text)).as("%s: ids with special tokens of %s", name, text)
                    .containsExactly(withSpecial);
            assertThat(tok.decode(withSpecial, false)).as("%s: decode of %s", name, text).isEqualTo(c.get("decoded").asText());
            assertThat(tok.decode(withSpecial, true)).as("%s: decode skipping special of %s", name, text)
                    .isEqualTo(c.get("decoded_skip_special").asText());
            assertThat(streamed(tok, withSpecial)).as("%s: streamed decode of %s", name, text)
                    .isEqualTo(c.get("decoded_skip_special").asText());
        }
        for (JsonNode c : expected.get("decode_only")) {
            int[] ids = ids(c.get("ids"));
            assertThat(tok.decode(ids, false)).as("%s: decode of %s", name, c.get("ids")).isEqualTo(c.get("decoded").asText());
            assertThat(tok.decode(ids, true)).as("%s: decode skipping special of %s", name, c.get("ids"))
                    .isEqualTo(c.get("decoded_skip_special").asText());
        }
    }

    @ParameterizedTest
    @CsvSource({"llama2-style", "mistral-v03-style", "metaspace-split-style", "partial-bytes-style", "unk-without-fallback-style",
            "normalized-added-style",
            "qwen2-byte-level"})
    void writtenBackFileEncodesTheSame(String name, @org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        BpeTokenizer tok = BpeTokenizer.read(DIR.resolve(name + ".tokenizer.json"));
        Path file = tmp.resolve("tokenizer.json");
        Files.writeString(file, JSON.writeValueAsString(tok.toJson()));
        BpeTokenizer back = BpeTokenizer.read(file);
        JsonNode expected = JSON.readTree(Files.readString(DIR.resolve(name + ".expected.json")));
        for (JsonNode c : expected.get("cases")) {
            String text = c.get("text").asText();
            assertThat(back.encodeWithSpecialTokens(text)).as("%s: %s", name, text).containsExactly(ids(c.get("ids_with_special")));
            assertThat(back.decode(ids(c.get("ids_with_special")), false)).isEqualTo(c.get("decoded").asText());
        }
    }

    private static String streamed(BpeTokenizer tok, int[] ids) {
        StreamDecoder d = tok.streamDecoder(true);
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(d.push(id));
        }
        return out.append(d.finish()).toString();
    }

    private static int[] ids(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.intValue()));
        return out.stream().mapToInt(Integer::intValue).toArray();
    }
}
