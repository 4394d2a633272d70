package dev.strata.memory.pool;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Starts test main classes in separate JVMs on this test's classpath. */
final class ChildJvm {
    private ChildJvm() {
    }

    /** The java binary: {@code strata.java} (set by surefire), else the one running this JVM. */
    static String javaBinary() {
        String configured = System.getProperty("strata.java");
        if (configured != null && !configured.isBlank()) {
            return configured;
        }
        return ProcessHandle.current().info().command().orElse("java");
    }

    static Process start(Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(javaBinary(), "--enable-native-access=ALL-UNNAMED",
                "--add-modules=jdk.incubator.vector",
                "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }
}
