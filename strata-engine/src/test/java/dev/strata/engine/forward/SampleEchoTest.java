package dev.strata.engine.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.expert.SlotScope;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.DemoModel;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.engine.synth.TextSample;
import dev.strata.engine.tokenizer.BpeTokenizer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Greedy decoding of a synthetic model echoes its built-in text sample: the output is readable
 * text, mostly of the sample's words (the LM head carries the sample's bigrams, so a word may also
 * be two sample words' pieces joined), never replacement characters or control bytes. Checked for the demo model itself (what {@code strata demo} and
 * {@code strata serve} show) and for small models of a byte-level and a SentencePiece-style family.
 */
class SampleEchoTest {
    static final int STEPS = 48;

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"demo", "qwen3-moe", "mixtral"})
    void greedyOutputIsReadableTextOfTheSamplesWords(String which) throws Exception {
        SynthSpec spec = switch (which) {
            case "demo" -> DemoModel.SPEC;
            case "qwen3-moe" -> SynthSpec.small(ModelFamily.QWEN3_MOE, 7);
            default -> SynthSpec.small(ModelFamily.MIXTRAL, 7);
        };
        Path out = dir.resolve(which);
        ModelSynthesizer.write(spec, out, (d, t, b, tb) -> { });
        try (ForwardRig rig = new ForwardRig(out, 1, 16, 8, 0, SlotScope.PER_LAYER)) {
            BpeTokenizer tok = rig.model.tokenizer();
            int[] prompt = tok.encode("The boat leaves the harbour and the");
            String text = tok.decode(rig.greedy(prompt, STEPS).tokens(), true);

            assertThat(text).as("output: %s", text).doesNotContain("\uFFFD");
            long readable = text.codePoints().filter(cp -> Character.isLetterOrDigit(cp) || Character.isWhitespace(cp)
                    || isPunctuation(cp)).count();
            long controls = text.codePoints().filter(cp -> cp != '\n' && Character.isISOControl(cp)).count();
            assertThat(controls).as("control characters in: %s", text).isZero();
            assertThat(readable).as("letters, digits, spaces and punctuation in: %s", text)
                    .isGreaterThanOrEqualTo(Math.round(0.9 * text.codePointCount(0, text.length())));

            Set<String> sampleWords = words(TextSample.all()).collect(Collectors.toSet());
            String[] outWords = words(text).toArray(String[]::new);
            assertThat(outWords.length).as("words in: %s", text).isGreaterThanOrEqualTo(8);
            long known = Arrays.stream(outWords).filter(sampleWords::contains).count();
            assertThat(known).as("words of the sample in: %s", text).isGreaterThanOrEqualTo((outWords.length + 1) / 2);
        }
    }

    private static java.util.stream.Stream<String> words(String text) {
        return Arrays.stream(text.split("[^\\p{L}]+")).filter(w -> w.length() >= 2);
    }

    private static boolean isPunctuation(int cp) {
        return switch (Character.getType(cp)) {
            case Character.CONNECTOR_PUNCTUATION, Character.DASH_PUNCTUATION, Character.START_PUNCTUATION,
                 Character.END_PUNCTUATION, Character.INITIAL_QUOTE_PUNCTUATION, Character.FINAL_QUOTE_PUNCTUATION,
                 Character.OTHER_PUNCTUATION, Character.MATH_SYMBOL -> true;
            default -> false;
        };
    }
}
