package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.ModelFormatException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SentencePiece-style files beyond the reference fixtures: round trips of arbitrary text and clear refusals. */
class SentencePieceTokenizerTest {
    private static final Path LLAMA2 = Path.of("src/test/fixtures/tokenizers/llama2-style.tokenizer.json");
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void llama2LayoutDecodesEveryTextBackExactly() {
        BpeTokenizer tok = BpeTokenizer.read(LLAMA2);
        int[] pool = " \t\n\r  abcxyzABC019.,;:!?()[]{}#_-+=/\\'\"éüßçñ中文字日本語한국어Ωπ∑€😀🚀🌊\u0301\u200d".codePoints().toArray();
        Random random = new Random(7);
        for (int n = 0; n < 500; n++) {
            StringBuilder s = new StringBuilder();
            int len = random.nextInt(40);
            for (int i = 0; i < len; i++) {
                s.appendCodePoint(pool[random.nextInt(pool.length)]);
            }
            String text = s.toString();
            int[] ids = tok.encode(text);
            assertThat(tok.decode(ids)).as("round trip of %s", text).isEqualTo(text);
            StreamDecoder d = tok.streamDecoder(false);
            StringBuilder streamed = new StringBuilder();
            for (int id : ids) {
                streamed.append(d.push(id));
            }
            assertThat(streamed.append(d.finish()).toString()).as("streamed %s", text).isEqualTo(text);
        }
    }

    @Test
    void unsupportedOrInconsistentFilesAreRefusedNamingThePart() throws Exception {
        refused(r -> r.putObject("normalizer").put("type", "Lowercase"), "normalizer", "Lowercase");
        refused(r -> r.putObject("pre_tokenizer").put("type", "Whitespace"), "pre_tokenizer", "Whitespace");
        refused(r -> r.putObject("decoder").put("type", "CTC"), "decoder", "CTC");
        refused(r -> ((ObjectNode) r.get("model")).put("unk_token", "<nope>"), "unk_token '<nope>'", "not in the vocabulary");
        refused(r -> r.putObject("pre_tokenizer").put("type", "Metaspace").put("prepend_scheme", "sometimes"),
                "prepend_scheme", "sometimes");
        refused(r -> ((ObjectNode) r.get("post_processor").get("special_tokens")).remove("<s>"), "post_processor", "'<s>'");
        refused(r -> ((ObjectNode) r.get("decoder").get("decoders").get(0)).remove("pattern"), "decoder Replace pattern");
    }

    private void refused(Consumer<ObjectNode> change, String... fragments) throws Exception {
        ObjectNode root = (ObjectNode) JSON.readTree(Files.readString(LLAMA2));
        change.accept(root);
        Path file = dir.resolve("tokenizer.json");
        Files.writeString(file, JSON.writeValueAsString(root));
        var thrown = assertThatThrownBy(() -> BpeTokenizer.read(file)).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining(file.toString());
        for (String f : fragments) {
            thrown.hasMessageContaining(f);
        }
    }
}
