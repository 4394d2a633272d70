package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamDecoderTest {
    private static final BpeTokenizer TOK = BpeTokenizerTest.TOK;

    private static int byteToken(int b) {
        return TOK.id(String.valueOf(ByteLevel.charOf(b)));
    }

    @Test
    void holdsSplitCharactersUntilComplete() {
        StreamDecoder d = TOK.streamDecoder(false);
        int[] euro = {byteToken(0xE2), byteToken(0x82), byteToken(0xAC)};
        assertThat(d.push(euro[0])).isEmpty();
        assertThat(d.push(euro[1])).isEmpty();
        assertThat(d.push(euro[2])).isEqualTo("€");
        assertThat(d.push(byteToken(0xF0))).isEmpty();
        assertThat(d.push(TOK.id("a"))).isEqualTo("\uFFFDa");
        assertThat(d.push(byteToken(0xE0))).isEmpty();
        assertThat(d.push(byteToken(0x80))).as("E0 80 can never be completed").isEqualTo("\uFFFD\uFFFD");
        assertThat(d.push(byteToken(0xED))).isEmpty();
        assertThat(d.push(byteToken(0xB0))).as("an encoded surrogate is waited for").isEmpty();
        assertThat(d.push(byteToken(0x98))).isEqualTo("\uFFFD");
        assertThat(d.push(byteToken(0xF0))).isEmpty();
        assertThat(d.finish()).isEqualTo("\uFFFD");
    }

    @Test
    void streamedTextEqualsWholeDecodeForRandomBytesAndTokens() {
        Property.forAll("stream decode", 300, r -> {
            List<Integer> ids = new ArrayList<>();
            int n = r.nextInt(40);
            for (int i = 0; i < n; i++) {
                int kind = r.nextInt(4);
                if (kind == 0) {
                    ids.add(byteToken(r.nextInt(256)));
                } else if (kind == 1) {
                    ids.add(byteToken(0x80 + r.nextInt(0x40)));
                } else if (kind == 2) {
                    ids.add(byteToken(new int[] {0xC3, 0xE0, 0xED, 0xF0, 0xF4, 0xE2}[r.nextInt(6)]));
                } else {
                    for (int id : TOK.encode(new String(Character.toChars(r.nextInt(0x20, 0x1FAFF)).clone()).replaceAll("[\\uD800-\\uDFFF]", "x"))) {
                        ids.add(id);
                    }
                }
            }
            int[] all = ids.stream().mapToInt(Integer::intValue).toArray();
            StreamDecoder d = TOK.streamDecoder(false);
            StringBuilder s = new StringBuilder();
            for (int id : all) {
                s.append(d.push(id));
            }
            s.append(d.finish());
            assertThat(s.toString()).as("bytes %s", java.util.HexFormat.ofDelimiter(" ").formatHex(TOK.decodeBytes(all, false)))
                    .isEqualTo(TOK.decode(all));
        });
    }
}
