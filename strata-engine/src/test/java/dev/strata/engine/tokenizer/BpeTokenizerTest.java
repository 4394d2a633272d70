package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.ModelFormatException;
import dev.strata.engine.synth.BpeTrainer;
import dev.strata.engine.synth.TextSample;
import dev.strata.testing.Property;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BpeTokenizerTest {
    @TempDir
    Path dir;

    static final List<String> SPECIALS = List.of("<|endoftext|>", "<|im_start|>", "<|im_end|>");

    static BpeTokenizer trained(String regex, int vocab) {
        BpeTrainer.Result r = BpeTrainer.train(TextSample.all(), PreTokenizer.of(regex), vocab);
        List<AddedToken> added = new ArrayList<>();
        int id = r.vocab().size();
        for (String s : SPECIALS) {
            added.add(new AddedToken(id++, s, true));
        }
        added.add(new AddedToken(id, "<think>", false));
        return new BpeTokenizer(r.vocab(), r.merges(), added, PreTokenizer.of(regex), false, false);
    }

    static final BpeTokenizer TOK = trained(PreTokenizer.QWEN2, 700);

    static final List<String> EDGE_CASES = List.of(
            "", " ", "  \n\n\t ", "Hello, world!", "Bake the bread at 220 degrees",
            "naïve café — déjà vu", "e\u0301 a\u0308 n\u0303 (combining marks)", "Z\u0351\u0348a\u035Bl\u0327go",
            "星空 and 月亮; 音楽は音の芸術です。", "한국어 텍스트", "emoji 🌊⛵🌱🍅 👩‍👩‍👧‍👦 🏳️‍🌈 skin 👍🏽",
            "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑∫√", "\u0000\u0001\u007F control bytes", "RTL עברית العربية",
            "x".repeat(3000), "ab".repeat(1500) + "🌊".repeat(300), "it's they're I'M WE'LL", "12345 678901 3.14159");

    @Test
    void roundTripsUtf8EdgeCases() {
        for (String s : EDGE_CASES) {
            int[] ids = TOK.encode(s);
            assertThat(TOK.decode(ids)).as(s).isEqualTo(s);
            assertThat(TOK.decodeBytes(ids, false)).isEqualTo(s.getBytes(StandardCharsets.UTF_8));
        }
        assertThat(TOK.encode("Bake the bread").length).as("merges learned from the sample apply")
                .isLessThan("Bake the bread".length());
    }

    @Test
    void roundTripsRandomCodePoints() {
        Property.forAll("bpe round trip", 150, r -> {
            StringBuilder s = new StringBuilder();
            int n = r.nextInt(60);
            for (int i = 0; i < n; i++) {
                int kind = r.nextInt(6);
                int cp = switch (kind) {
                    case 0 -> r.nextInt(0x20, 0x7F);
                    case 1 -> " \n\t'".charAt(r.nextInt(4));
                    case 2 -> r.nextInt(0xA0, 0x800);
                    case 3 -> r.nextInt(0x4E00, 0x9FFF);
                    case 4 -> r.nextInt(0x1F300, 0x1FAFF);
                    default -> r.nextInt(0x300, 0x370);
                };
                s.appendCodePoint(cp);
            }
            String text = s.toString();
            assertThat(TOK.decode(TOK.encode(text))).isEqualTo(text);
        });
    }

    @Test
    void specialTokensAreMatchedWholeAndNeverSplit() {
        int start = TOK.id("<|im_start|>");
        int end = TOK.id("<|im_end|>");
        int[] ids = TOK.encode("<|im_start|>user\nhi<|im_end|><|im_end|>x<think>");
        assertThat(ids[0]).isEqualTo(start);
        assertThat(ids).containsSubsequence(end, end);
        assertThat(ids[ids.length - 1]).isEqualTo(TOK.id("<think>"));
        assertThat(TOK.decode(ids)).isEqualTo("<|im_start|>user\nhi<|im_end|><|im_end|>x<think>");
        assertThat(TOK.decode(ids, true)).isEqualTo("user\nhix<think>");
        int[] plain = TOK.encodeOrdinary("<|im_end|>");
        assertThat(plain).doesNotContain(end).hasSizeGreaterThan(1);
        assertThat(TOK.decode(plain)).isEqualTo("<|im_end|>");
        assertThat(TOK.isSpecial(end)).isTrue();
        assertThat(TOK.isSpecial(TOK.id("<think>"))).isFalse();
    }

    @Test
    void invalidBytesDecodeToReplacementCharacters() {
        int ff = TOK.id(String.valueOf(ByteLevel.charOf(0xFF)));
        int e2 = TOK.id(String.valueOf(ByteLevel.charOf(0xE2)));
        int x82 = TOK.id(String.valueOf(ByteLevel.charOf(0x82)));
        int a = TOK.id("a");
        assertThat(TOK.decode(new int[] {ff})).isEqualTo("\uFFFD");
        assertThat(TOK.decode(new int[] {e2, x82, a})).as("a truncated 3-byte sequence is one U+FFFD").isEqualTo("\uFFFDa");
        assertThat(TOK.decode(new int[] {x82, x82})).as("two lone continuation bytes").isEqualTo("\uFFFD\uFFFD");
        int ed = TOK.id(String.valueOf(ByteLevel.charOf(0xED)));
        int xb0 = TOK.id(String.valueOf(ByteLevel.charOf(0xB0)));
        assertThat(TOK.decode(new int[] {ed, xb0, x82, a})).as("an encoded surrogate is one U+FFFD").isEqualTo("\uFFFDa");
        assertThat(TOK.decodeBytes(new int[] {e2, x82, a}, false)).containsExactly(0xE2, 0x82, 'a');
        int[] euro = TOK.encode("€");
        assertThat(TOK.decode(euro)).isEqualTo("€");
        assertThatThrownBy(() -> TOK.decode(new int[] {TOK.size()})).hasMessageContaining("token id " + TOK.size());
    }

    @Test
    void byteLevelMapping() {
        assertThat(ByteLevel.charOf(' ')).isEqualTo('Ġ');
        assertThat(ByteLevel.charOf('\n')).isEqualTo('Ċ');
        assertThat(ByteLevel.charOf('A')).isEqualTo('A');
        for (int b = 0; b < 256; b++) {
            assertThat(ByteLevel.byteOf(ByteLevel.charOf(b))).isEqualTo(b);
        }
    }

    @Test
    void splitRegexesOfTheFamilies() {
        assertThat(PreTokenizer.of(PreTokenizer.LLAMA3).split("Hello world's 12345!!\n\n  x"))
                .containsExactly("Hello", " world", "'s", " ", "123", "45", "!!\n\n", " ", " x");
        assertThat(PreTokenizer.of(PreTokenizer.QWEN2).split("ab 123"))
                .containsExactly("ab", " ", "1", "2", "3");
        assertThat(PreTokenizer.of(PreTokenizer.LLAMA3).split("I'M 星空")).containsExactly("I", "'M", " 星空");
        assertThat(PreTokenizer.none().split("a b")).containsExactly("a b");
    }

    /** Plain BPE: repeatedly merge the leftmost adjacent pair of lowest rank. */
    static List<String> referenceBpe(String word, Map<String, Integer> ranks) {
        List<String> s = new ArrayList<>();
        for (char c : word.toCharArray()) {
            s.add(String.valueOf(c));
        }
        while (true) {
            int best = -1;
            int bestRank = Integer.MAX_VALUE;
            for (int i = 0; i + 1 < s.size(); i++) {
                Integer r = ranks.get(s.get(i) + " " + s.get(i + 1));
                if (r != null && r < bestRank) {
                    bestRank = r;
                    best = i;
                }
            }
            if (best < 0) {
                return s;
            }
            s.set(best, s.get(best) + s.get(best + 1));
            s.remove(best + 1);
        }
    }

    @Test
    void mergesApplyInRankOrderLikeAReferenceBpe() {
        Property.forAll("bpe rank order", 40, r -> {
            String alphabet = "abcd";
            Map<String, Integer> vocab = new LinkedHashMap<>();
            for (int b = 0; b < 256; b++) {
                vocab.put(String.valueOf(ByteLevel.charOf(b)), b);
            }
            List<String> tokens = new ArrayList<>();
            for (char c : alphabet.toCharArray()) {
                tokens.add(String.valueOf(c));
            }
            List<String[]> merges = new ArrayList<>();
            Map<String, Integer> ranks = new HashMap<>();
            int nMerges = 5 + r.nextInt(40);
            for (int m = 0; m < nMerges; m++) {
                String a = tokens.get(r.nextInt(tokens.size()));
                String b = tokens.get(r.nextInt(tokens.size()));
                if (ranks.containsKey(a + " " + b) || (a + b).length() > 8) {
                    continue;
                }
                ranks.put(a + " " + b, merges.size());
                merges.add(new String[] {a, b});
                vocab.putIfAbsent(a + b, vocab.size());
                if (!tokens.contains(a + b)) {
                    tokens.add(a + b);
                }
            }
            BpeTokenizer t = new BpeTokenizer(vocab, merges, List.of(), PreTokenizer.none(), false, false);
            for (int w = 0; w < 30; w++) {
                StringBuilder word = new StringBuilder();
                int len = 1 + r.nextInt(w < 25 ? 12 : 200);
                for (int i = 0; i < len; i++) {
                    word.append(alphabet.charAt(r.nextInt(alphabet.length())));
                }
                List<String> expected = referenceBpe(word.toString(), ranks);
                List<String> actual = new ArrayList<>();
                for (int id : t.encode(word.toString())) {
                    actual.add(t.token(id));
                }
                assertThat(actual).as("word %s", word).isEqualTo(expected);
            }
        });
    }

    @Test
    void tokenizerJsonRoundTripsAndAcceptsBothMergeForms() throws Exception {
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = TOK.toJson();
        Path file = dir.resolve("tokenizer.json");
        Files.writeString(file, json.writeValueAsString(root));
        BpeTokenizer back = BpeTokenizer.read(dir);
        for (String s : EDGE_CASES) {
            assertThat(back.encode(s)).isEqualTo(TOK.encode(s));
        }
        ArrayNode pairs = json.createArrayNode();
        for (String[] m : TOK.merges()) {
            pairs.addArray().add(m[0]).add(m[1]);
        }
        ((ObjectNode) root.get("model")).set("merges", pairs);
        Files.writeString(file, json.writeValueAsString(root));
        BpeTokenizer pairForm = BpeTokenizer.read(file);
        assertThat(pairForm.encode("星空 and the bread 🌊")).isEqualTo(TOK.encode("星空 and the bread 🌊"));
        assertThat(pairForm.preTokenizer().regex()).isEqualTo(PreTokenizer.QWEN2);
    }

    @Test
    void malformedTokenizerFilesAreRefused() throws Exception {
        ObjectMapper json = new ObjectMapper();
        Path file = dir.resolve("tokenizer.json");
        ObjectNode root = TOK.toJson();
        ((ObjectNode) root.get("model")).putArray("merges").add("Ġt h e");
        Files.writeString(file, json.writeValueAsString(root));
        assertThatThrownBy(() -> BpeTokenizer.read(file)).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("merge 0 'Ġt h e'");
        root = TOK.toJson();
        ((ObjectNode) root.get("model")).putArray("merges").add("qq zz");
        Files.writeString(file, json.writeValueAsString(root));
        assertThatThrownBy(() -> BpeTokenizer.read(file)).hasMessageContaining("'qq'").hasMessageContaining("not in the vocabulary");
        root = TOK.toJson();
        ((ObjectNode) root.get("model").get("vocab")).remove("Ġ");
        Files.writeString(file, json.writeValueAsString(root));
        assertThatThrownBy(() -> BpeTokenizer.read(file)).hasMessageContaining("byte 0x20");
        root = TOK.toJson();
        root.putObject("normalizer").put("type", "NFKD");
        Files.writeString(file, json.writeValueAsString(root));
        assertThatThrownBy(() -> BpeTokenizer.read(file)).hasMessageContaining("normalizer").hasMessageContaining("NFKD");
        root = TOK.toJson();
        ((ObjectNode) root.get("model")).put("byte_fallback", true);
        Files.writeString(file, json.writeValueAsString(root));
        assertThatThrownBy(() -> BpeTokenizer.read(file)).hasMessageContaining("byte_fallback");
        Files.writeString(file, "{oops");
        assertThatThrownBy(() -> BpeTokenizer.read(file)).hasMessageContaining("not valid JSON");
    }

    @Test
    void nfcNormalizerComposesAndIgnoreMergesTakesWholeWords() {
        BpeTrainer.Result r = BpeTrainer.train(TextSample.all(), PreTokenizer.of(PreTokenizer.LLAMA3), 600);
        BpeTokenizer nfc = new BpeTokenizer(r.vocab(), r.merges(), List.of(), PreTokenizer.of(PreTokenizer.LLAMA3), true, false);
        assertThat(nfc.decode(nfc.encode("cafe\u0301"))).isEqualTo("café");
        Map<String, Integer> vocab = new LinkedHashMap<>(r.vocab());
        vocab.put("Ġzyzzyva", vocab.size());
        BpeTokenizer whole = new BpeTokenizer(vocab, r.merges(), List.of(), PreTokenizer.of(PreTokenizer.LLAMA3), false, true);
        assertThat(whole.encode(" zyzzyva")).containsExactly(vocab.get("Ġzyzzyva"));
        assertThat(whole.encode(" zyzzyvas").length).isGreaterThan(1);
    }

    @Test
    void chatFormatsOfTheFamilies() {
        List<ChatMessage> chat = List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi"), ChatMessage.assistant("Hello"),
                ChatMessage.user("Bye"));
        assertThat(ChatFormat.CHATML.render(chat, true, null, null)).isEqualTo(
                "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
                        + "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
        assertThat(ChatFormat.LLAMA3.render(List.of(ChatMessage.user(" Hi ")), true, "<|begin_of_text|>", null)).isEqualTo(
                "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                        + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(ChatFormat.MISTRAL_INST.render(chat, true, "<s>", "</s>"))
                .isEqualTo("<s>[INST] Be brief.\n\nHi [/INST]Hello</s>[INST] Bye [/INST]");
        assertThatThrownBy(() -> ChatFormat.MISTRAL_INST.render(List.of(ChatMessage.assistant("x")), true, "<s>", "</s>"))
                .hasMessageContaining("alternating").hasMessageContaining("'assistant'");
        assertThat(ChatFormat.TULU.render(List.of(ChatMessage.user("Hi"), ChatMessage.assistant("Yo")), true, null, "<|endoftext|>"))
                .isEqualTo("<|user|>\nHi\n<|assistant|>\nYo<|endoftext|>\n<|assistant|>\n");
        int[] ids = TOK.encode(ChatFormat.CHATML.render(chat, true, null, null));
        assertThat(ids[0]).isEqualTo(TOK.id("<|im_start|>"));
        assertThat(java.util.Arrays.stream(ids).filter(i -> i == TOK.id("<|im_end|>")).count()).isEqualTo(4);
    }

    @Test
    void toolCallsAndResultsRenderInTheHermesFormOfEachFamily() {
        String call = "{\"name\":\"weather\",\"arguments\":{\"city\":\"Paris\"}}";
        List<ChatMessage> chat = List.of(ChatMessage.user("Weather?"), ChatFormat.CHATML.assistantToolCalls("Checking.", List.of(call, call)),
                ChatFormat.CHATML.toolResult("sunny"));
        assertThat(ChatFormat.CHATML.render(chat, true, null, null)).isEqualTo(
                "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\nChecking.\n<tool_call>\n" + call + "\n</tool_call>\n"
                        + "<tool_call>\n" + call + "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response>"
                        + "<|im_end|>\n<|im_start|>assistant\n");
        assertThat(ChatFormat.CHATML.assistantToolCalls("", List.of(call)).content()).isEqualTo("<tool_call>\n" + call + "\n</tool_call>");
        assertThat(ChatFormat.LLAMA3.toolResult("sunny")).isEqualTo(new ChatMessage("ipython", "sunny"));
        assertThat(ChatFormat.MISTRAL_INST.render(List.of(ChatMessage.user("Weather?"), ChatFormat.MISTRAL_INST.assistantToolCalls(null,
                List.of(call)), ChatFormat.MISTRAL_INST.toolResult("sunny")), true, "<s>", "</s>")).as("the result is the user's turn")
                .isEqualTo("<s>[INST] Weather? [/INST]<tool_call>\n" + call + "\n</tool_call></s>[INST] <tool_response>\nsunny\n"
                        + "</tool_response> [/INST]");
    }

    @Test
    void longWordsEncodeWithoutQuadraticRescans() {
        SplittableRandom r = new SplittableRandom(3);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 200_000; i++) {
            s.append((char) ('a' + r.nextInt(6)));
        }
        String text = s.toString();
        BpeTokenizer whole = new BpeTokenizer(
                BpeTrainer.train(text.substring(0, 20000), PreTokenizer.none(), 400).vocab(),
                BpeTrainer.train(text.substring(0, 20000), PreTokenizer.none(), 400).merges(), List.of(), PreTokenizer.none(),
                false, false);
        int[] ids = whole.encode(text);
        assertThat(whole.decode(ids)).isEqualTo(text);
        assertThat(ids.length).isLessThan(text.length() / 2);
    }
}
