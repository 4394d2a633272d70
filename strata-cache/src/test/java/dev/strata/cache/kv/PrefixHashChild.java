package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Prints the prefix-hash keys of fixed and seeded-random token sequences under several contexts,
 * one {@code context sequence block key} line each, then {@code done}; run in a separate JVM by
 * {@link PrefixHasherTest} and compared with the same lines computed in the test's JVM.
 */
public final class PrefixHashChild {
    private PrefixHashChild() {
    }

    public static void main(String[] args) {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line : lines()) {
            out.println(line);
        }
        out.println("done");
        out.flush();
    }

    /** The contexts hashed: a base one and one changed in each field. */
    static List<PrefixHashContext> contexts() {
        KvGeometry g = new KvGeometry(80, 8, 128, KvDtype.FP16, 16);
        ObjectKey model = ModelFingerprint.of("llama-2-70b", g);
        PrefixHashContext base = PrefixHashContext.of(model, g);
        return List.of(base,
                new PrefixHashContext(ModelFingerprint.of("llama-2-70b-chat", g), KvDtype.FP16, 16, "", ""),
                new PrefixHashContext(model, KvDtype.FP8_E4M3, 16, "", ""),
                new PrefixHashContext(model, KvDtype.FP16, 13, "", ""),
                base.withAdapter("lora-sql-v2"),
                base.withTenantSalt("tenant-ü-42"),
                base.withAdapter("lora-sql-v2").withTenantSalt("tenant-ü-42"));
    }

    /** The token sequences hashed, by name. */
    static List<int[]> sequences() {
        List<int[]> all = new ArrayList<>();
        int[] counting = new int[100];
        for (int i = 0; i < counting.length; i++) {
            counting[i] = i;
        }
        all.add(counting);
        // token ids at and above 2^31 arrive as negative ints
        all.add(new int[] {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -2, 1, 0x80000001, 151_643, -1, -1, -1, -1, -1, -1,
                -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 7});
        SplittableRandom random = new SplittableRandom(20_261_122L);
        for (int s = 0; s < 3; s++) {
            int[] tokens = new int[200 + random.nextInt(300)];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = random.nextInt();
            }
            all.add(tokens);
        }
        return all;
    }

    /** The lines the child prints. */
    static List<String> lines() {
        List<String> lines = new ArrayList<>();
        List<PrefixHashContext> contexts = contexts();
        List<int[]> sequences = sequences();
        for (int c = 0; c < contexts.size(); c++) {
            PrefixHasher hasher = new PrefixHasher(contexts.get(c));
            lines.add(c + " root " + hasher.root());
            for (int s = 0; s < sequences.size(); s++) {
                int[] tokens = sequences.get(s);
                ObjectKey[] keys = hasher.chain(tokens, tokens.length);
                for (int b = 0; b < keys.length; b++) {
                    lines.add(c + " " + s + " " + b + " " + keys[b]);
                }
            }
        }
        return lines;
    }

    /** Starts this class in a new JVM on the test class path. */
    static Process start(String... jvmFlags) throws IOException {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "--add-modules=jdk.incubator.vector", "-Xmx64m", "-XX:+UseSerialGC"));
        command.addAll(List.of(jvmFlags));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), PrefixHashChild.class.getName()));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }
}
