package dev.strata.bench;

import dev.strata.memory.Sizes;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Describes the machine a benchmark ran on (processor, cores, memory, kernel, JDK), so that every
 * figure carries its context. Stateless; any thread.
 */
public final class MachineInfo {
    private MachineInfo() {
    }

    /** e.g. {@code AMD EPYC 7B13, 2 cores, 23.4 GiB, Linux 6.18 amd64, JDK 25}. */
    public static String describe() {
        String cpu = "unknown processor";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    cpu = line.substring(line.indexOf(':') + 1).trim();
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: keep the generic name
        }
        long memory = 0;
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            memory = os.getTotalMemorySize();
        }
        return cpu + ", " + Runtime.getRuntime().availableProcessors() + " cores, " + Sizes.format(memory) + ", "
                + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch")
                + ", JDK " + Runtime.version().feature();
    }
}
