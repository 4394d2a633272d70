package dev.strata.bench.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.bench.Sample;
import dev.strata.bench.Trials;
import dev.strata.engine.constrain.ConstrainedDecoder;
import dev.strata.engine.constrain.SchemaGrammar;
import dev.strata.engine.constrain.TokenVocabulary;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.serve.ContinuousBatchingGenerator;
import dev.strata.engine.serve.GenerationRequest;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.serve.ServeMetrics;
import dev.strata.engine.serve.TextSink;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What constrained decoding costs: decode tokens/s of answers constrained to a JSON schema against
 * unconstrained answers on the same model, through the serving path (generator, scheduler,
 * sampler), in paired rounds (each round samples both with the same seed); and the mask's own
 * cost per token (walking the vocabulary trie from each grammar state, applying the mask), for the
 * first request of a schema (every state new) and for a repeated one (masks cached), against the
 * time of one unconstrained decode step.
 *
 * <p>The schema is a typical extraction answer: a few typed fields and a free-text field of at
 * least {@code tokens / 2} characters, so that a random-weight model writes most of the budget.
 * Confined to the calling thread; the engine runs on its own threads.
 */
public final class ConstrainedDecodeMeasure {
    public static final String RATE_GOAL = ">= 0.9";
    static final String MASK_GOAL = "<= 0.1";
    public static final String BASELINE = "unconstrained decoding, same model, prompt and seed";
    static final String STEP_BASELINE = "one unconstrained decode step";
    private static final ObjectMapper JSON = new ObjectMapper();

    private ConstrainedDecodeMeasure() {
    }

    /** The schema of the constrained answers, with a free-text field of at least {@code minChars} characters. */
    static JsonNode schema(int minChars) {
        try {
            return JSON.readTree("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":24},"
                    + "\"tier\":{\"enum\":[\"DEVICE\",\"PEER\",\"HOST\",\"POOL\",\"DISK\",\"CLUSTER\"]},\"blocks\":{\"type\":\"integer\"},"
                    + "\"shared\":{\"type\":\"boolean\"},\"summary\":{\"type\":\"string\",\"minLength\":" + minChars + "}},"
                    + "\"required\":[\"name\",\"tier\",\"blocks\",\"shared\",\"summary\"],\"additionalProperties\":false}");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * @param tokens    the budget of each answer
     * @param rounds    paired rounds
     * @param maxRounds paired rounds of the decode rate when the first {@code rounds} leave its
     *                  verdict open ({@link Trials#pairedUntilDecided}; {@code rounds} for none)
     */
    public static List<Figure> figures(Path dir, int threads, int tokens, int rounds, int maxRounds) {
        int blocks = (64 + tokens) / 16 + 4;
        try (ServeEngine engine = new ServeEngine(dir, threads, 16, blocks, 0);
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics())) {
            int[] prompt = engine.model().tokenizer().encode("Describe the memory tier that holds this block, as JSON.");
            JsonNode schema = schema(tokens / 2);
            SchemaGrammar grammar = SchemaGrammar.of(schema);
            long[] seed = {1};
            Paired rate = Trials.pairedUntilDecided(rounds, maxRounds, RATE_GOAL,
                    () -> tokensPerSecond(generator, new GenerationRequest(prompt, sampling(tokens, seed[0]))),
                    () -> tokensPerSecond(generator, new GenerationRequest(prompt, sampling(tokens, seed[0]++),
                            GenerationRequest.NO_LOGPROBS, grammar)));
            double stepMicros = 1e6 / rate.baselineSample().median();

            TokenVocabulary vocabulary = TokenVocabulary.of(engine.model().tokenizer(), engine.model().tokenizer().size());
            int vocab = vocabulary.size();
            int[] ends = generator.eosTokens().stream().mapToInt(Integer::intValue).toArray();
            Sample first = Trials.sample(rounds, () -> maskMicros(SchemaGrammar.of(schema), vocabulary, ends, tokens, 7));
            SchemaGrammar shared = SchemaGrammar.of(schema);
            maskMicros(shared, vocabulary, ends, tokens, 7); // fills the cache
            Sample repeat = Trials.sample(rounds, () -> maskMicros(shared, vocabulary, ends, tokens, 7));
            String note = String.format(Locale.ROOT, "vocabulary %d tokens, %d trie nodes; schema answers of up to %d tokens"
                    + " with a free-text field of >= %d characters; temperature 1", vocab, vocabulary.trieNodes(), tokens, tokens / 2);
            return List.of(
                    Figure.paired("constrained_decode_tokens_per_s", "tokens/s", BASELINE, rate, RATE_GOAL).withNote(note),
                    Figure.sampled("constrained_mask_us_per_token_first_request", "us/token", STEP_BASELINE, first, stepMicros,
                            MASK_GOAL).withNote("a new schema: every grammar state's mask is walked; random logits"),
                    Figure.sampled("constrained_mask_us_per_token_repeated_schema", "us/token", STEP_BASELINE, repeat, stepMicros,
                            MASK_GOAL).withNote("the same schema again: masks come from the cache"));
        }
    }

    /**
     * The mask's cost on a vocabulary of a real checkpoint's size (Qwen3's 151,643 tokens; a
     * generated one, shaped as byte-level BPE vocabularies are: see {@link #generatedVocabulary}),
     * against the sampler's own work on the same row (temperature sampling over every token), in
     * paired rounds; the first request of a schema (every mask walked) and a repeated one.
     */
    public static List<Figure> largeVocabularyFigures(int size, int tokens, int rounds) {
        byte[][] vocab = generatedVocabulary(size, 42);
        int end = vocab.length; // the end id: one past the generated tokens
        byte[][] withEnd = java.util.Arrays.copyOf(vocab, vocab.length + 1);
        TokenVocabulary vocabulary = new TokenVocabulary(withEnd);
        JsonNode schema = schema(tokens / 2);
        int[] ends = {end};
        dev.strata.engine.sample.Sampler sampler = new dev.strata.engine.sample.Sampler(
                SamplingParams.builder().maxTokens(tokens).temperature(1.0).seed(5).build(), vocabulary.size());
        Paired first = Trials.paired(rounds, () -> samplerMicros(sampler, vocabulary.size(), tokens, 7),
                () -> maskMicros(SchemaGrammar.of(schema), vocabulary, ends, tokens, 7));
        SchemaGrammar shared = SchemaGrammar.of(schema);
        maskMicros(shared, vocabulary, ends, tokens, 7);
        Paired repeat = Trials.paired(rounds, () -> samplerMicros(sampler, vocabulary.size(), tokens, 7),
                () -> maskMicros(shared, vocabulary, ends, tokens, 7));
        String note = String.format(Locale.ROOT, "a generated vocabulary of %d tokens (%d trie nodes): 256 single bytes, then"
                + " words of 1-12 letters (English letter frequencies, 40%% with a leading space), numbers, punctuation runs and"
                + " CJK characters; answers of up to %d tokens, greedy from random logits", size, vocabulary.trieNodes(), tokens);
        String baseline = "temperature sampling over the same row (the sampler's work per token)";
        return List.of(
                Figure.paired("constrained_mask_vs_sampling_first_request_" + size / 1000 + "k_vocab", "us/token", baseline, first,
                        ">= 0").withNote(note + "; every mask walked; information"),
                Figure.paired("constrained_mask_vs_sampling_repeated_schema_" + size / 1000 + "k_vocab", "us/token", baseline, repeat,
                        "<= 1").withNote(note + "; masks from the cache; goal: no more than sampling itself"));
    }

    /**
     * A vocabulary shaped like a byte-level BPE one: the 256 single bytes, then distinct pieces
     * until {@code size}: words of 1 to 12 letters drawn with English letter frequencies (40% with
     * a leading space, 10% capitalised), numbers of 1 to 3 digits, runs of JSON and code
     * punctuation, and one to three CJK characters (3 bytes each).
     */
    static byte[][] generatedVocabulary(int size, long seed) {
        String letters = "eeeeeeeeeeeetttttttttaaaaaaaaooooooooiiiiiiinnnnnnnssssssrrrrrrhhhhhdddlllluuucccmmmffyywwggppbbvkxqjz";
        String punctuation = "{}[]\":,.;()<>/-_=+*&%$#@!?'|~`^";
        SplittableRandom r = new SplittableRandom(seed);
        java.util.LinkedHashSet<String> pieces = new java.util.LinkedHashSet<>();
        List<byte[]> out = new java.util.ArrayList<>();
        for (int b = 0; b < 256; b++) {
            out.add(new byte[] {(byte) b});
        }
        while (out.size() < size) {
            StringBuilder p = new StringBuilder();
            int kind = r.nextInt(100);
            if (kind < 80) {
                if (r.nextInt(10) < 4) {
                    p.append(' ');
                }
                int n = 1 + Math.min(11, (int) (-Math.log(1 - r.nextDouble()) * 4));
                for (int i = 0; i < n; i++) {
                    char c = letters.charAt(r.nextInt(letters.length()));
                    p.append(i == 0 && r.nextInt(10) == 0 ? Character.toUpperCase(c) : c);
                }
            } else if (kind < 88) {
                int n = 1 + r.nextInt(3);
                for (int i = 0; i < n; i++) {
                    p.append((char) ('0' + r.nextInt(10)));
                }
            } else if (kind < 96) {
                int n = 1 + r.nextInt(3);
                for (int i = 0; i < n; i++) {
                    p.append(punctuation.charAt(r.nextInt(punctuation.length())));
                }
            } else {
                int n = 1 + r.nextInt(3);
                for (int i = 0; i < n; i++) {
                    p.append((char) (0x4E00 + r.nextInt(0x9FFF - 0x4E00)));
                }
            }
            if (pieces.add(p.toString())) {
                out.add(p.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        return out.toArray(byte[][]::new);
    }

    /** Microseconds per token of temperature sampling over a row of {@code size} random logits. */
    private static double samplerMicros(dev.strata.engine.sample.Sampler sampler, int size, int tokens, long seed) {
        float[] logits = new float[size];
        SplittableRandom random = new SplittableRandom(seed);
        long nanos = 0;
        int sink = 0;
        for (int step = 0; step < tokens; step++) {
            for (int i = 0; i < size; i++) {
                logits[i] = (float) random.nextDouble();
            }
            long t0 = System.nanoTime();
            sink += sampler.sample(logits);
            nanos += System.nanoTime() - t0;
        }
        if (sink == Integer.MIN_VALUE) {
            throw new IllegalStateException("unreachable: keeps the samples live");
        }
        return nanos / 1e3 / tokens;
    }

    private static SamplingParams sampling(int tokens, long seed) {
        return SamplingParams.builder().maxTokens(tokens).temperature(1.0).seed(seed).build();
    }

    /** Generates one answer; tokens per second of its decoding (after the prompt was run). */
    private static double tokensPerSecond(ContinuousBatchingGenerator generator, GenerationRequest request) {
        long[] startedAt = new long[1];
        CompletableFuture<double[]> done = new CompletableFuture<>();
        generator.submit(request, new TextSink() {
            @Override
            public void started(int promptTokens, int reusedTokens) {
                startedAt[0] = System.nanoTime();
            }

            @Override
            public void text(String delta) {
            }

            @Override
            public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                done.complete(new double[] {completionTokens, (System.nanoTime() - startedAt[0]) / 1e9});
            }

            @Override
            public void failed(RuntimeException error) {
                done.completeExceptionally(error);
            }
        });
        try {
            double[] r = done.get(10, TimeUnit.MINUTES);
            return r[0] / r[1];
        } catch (Exception e) {
            throw new IllegalStateException("a generation of the constrained-decoding measure failed", e);
        }
    }

    /** Microseconds per token of masking, sampling greedily from random logits, over one answer of up to {@code tokens}. */
    static double maskMicros(SchemaGrammar grammar, TokenVocabulary vocabulary, int[] ends, int tokens, long seed) {
        float[] logits = new float[vocabulary.size()];
        SplittableRandom random = new SplittableRandom(seed);
        ConstrainedDecoder d = new ConstrainedDecoder(grammar, vocabulary, ends, tokens);
        long nanos = 0;
        int steps = 0;
        for (; steps < tokens; steps++) {
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) random.nextDouble();
            }
            long t0 = System.nanoTime();
            float[] row = d.mask(logits);
            int best = 0;
            for (int i = 1; i < row.length; i++) {
                if (row[i] > row[best]) {
                    best = i;
                }
            }
            d.accept(best);
            nanos += System.nanoTime() - t0;
            int chosen = best;
            if (java.util.Arrays.stream(ends).anyMatch(e -> e == chosen)) {
                steps++;
                break;
            }
        }
        return nanos / 1e3 / steps;
    }
}
