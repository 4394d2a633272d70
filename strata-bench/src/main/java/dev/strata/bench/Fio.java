package dev.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.memory.log.Log;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The disk baseline: runs {@code fio} with direct I/O on the same file system as the DISK tier
 * and reports its bandwidth, so that the tier's figures are ratios against the device as fio sees it.
 *
 * <p>When fio is not installed, {@link #ensureInstalled} installs it from the distribution's
 * packages where that is possible (root, apt-get present) and otherwise says why it is absent.
 *
 * <p>Stateless; any thread (each run is its own process).
 */
public final class Fio {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String FILE = "strata-fio.dat";                 // the plain jobs' file
    private static final String VERIFIED_FILE = "strata-fio-verified.dat"; // the verifying read's file, with a hash per block

    private Fio() {
    }

    /**
     * Finds fio, installing it with apt-get when allowed and possible.
     *
     * @param allowInstall whether to try installing it
     * @param notes        receives a sentence about what happened when fio was not already there
     * @return the fio command, or empty when it cannot be had
     */
    public static Optional<String> ensureInstalled(boolean allowInstall, List<String> notes) {
        if (onPath("fio")) {
            return Optional.of("fio");
        }
        if (!allowInstall) {
            notes.add("fio is not installed and installing was not allowed (--no-install): disk figures have no fio baseline");
            return Optional.empty();
        }
        if (!onPath("apt-get") || !"root".equals(System.getProperty("user.name"))) {
            notes.add("fio is not installed and cannot be installed here (needs root and apt-get): install it with your"
                    + " package manager; disk figures have no fio baseline");
            return Optional.empty();
        }
        Log.info("bench", "fio not found: installing it with apt-get (the disk baseline) ...");
        boolean ok = run(List.of("apt-get", "install", "-y", "-q", "fio"), 300)
                || (run(List.of("apt-get", "update", "-q"), 300) && run(List.of("apt-get", "install", "-y", "-q", "fio"), 300));
        if (ok && onPath("fio")) {
            notes.add("fio was installed with apt-get for the disk baseline");
            return Optional.of("fio");
        }
        notes.add("fio is not installed and 'apt-get install fio' failed: disk figures have no fio baseline");
        return Optional.empty();
    }

    private static boolean onPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    private static boolean run(List<String> command, int timeoutSeconds) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
            pb.environment().put("DEBIAN_FRONTEND", "noninteractive");
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Measures sequential direct-I/O bandwidth with fio: {@code blockBytes} requests, {@code inFlight}
     * of them outstanding (libaio), over a file of {@code fileBytes} in {@code directory}.
     *
     * @param write true for writes, false for reads (the file is laid out first)
     * @return bytes per second
     * @throws IOException if fio fails, with its output
     */
    public static double bandwidth(String fio, Path directory, long fileBytes, long blockBytes, int inFlight, boolean write)
            throws IOException {
        List<String> cmd = job(fio, directory, FILE, fileBytes, blockBytes, inFlight, write ? "write" : "read");
        cmd.add("--invalidate=1");
        return bytesPerSecond(cmd, write ? "write" : "read");
    }

    /**
     * Measures sequential direct-I/O reads that verify every block, as a DISK read verifies its
     * object's checksum: fio lays the file out with an xxhash in each {@code blockBytes} block,
     * then reads it back checking each one ({@code --verify_only}), {@code inFlight} outstanding.
     * Only the verifying read is timed.
     *
     * @return bytes per second of the verifying read
     * @throws IOException if fio fails or a block does not verify, with its output
     */
    public static double verifiedReadBandwidth(String fio, Path directory, long fileBytes, long blockBytes, int inFlight)
            throws IOException {
        layOutVerified(fio, directory, fileBytes, blockBytes, inFlight);
        return verifyingRead(fio, directory, fileBytes, blockBytes, inFlight);
    }

    /**
     * The untimed half of {@link #verifiedReadBandwidth}: writes the file with an xxhash in every
     * {@code blockBytes} block. Once is enough for any number of {@link #verifyingRead}s of the
     * same size and block.
     */
    static void layOutVerified(String fio, Path directory, long fileBytes, long blockBytes, int inFlight) throws IOException {
        List<String> layout = job(fio, directory, VERIFIED_FILE, fileBytes, blockBytes, inFlight, "write");
        layout.addAll(List.of("--verify=xxhash", "--do_verify=0", "--verify_state_save=0"));
        bytesPerSecond(layout, "write");
    }

    /** The timed half of {@link #verifiedReadBandwidth}: reads the laid-out file, checking every block's hash. */
    static double verifyingRead(String fio, Path directory, long fileBytes, long blockBytes, int inFlight) throws IOException {
        List<String> read = job(fio, directory, VERIFIED_FILE, fileBytes, blockBytes, inFlight, "write");
        read.addAll(List.of("--verify=xxhash", "--verify_only=1", "--verify_state_save=0", "--invalidate=1"));
        return bytesPerSecond(read, "read");
    }

    /** The common part of a job: one job, direct I/O through libaio, {@code inFlight} deep, JSON output. */
    private static List<String> job(String fio, Path directory, String file, long fileBytes, long blockBytes, int inFlight,
                                    String rw) {
        return new ArrayList<>(List.of(fio, "--name=strata-baseline", "--directory=" + directory, "--filename=" + file,
                "--size=" + fileBytes, "--bs=" + blockBytes, "--rw=" + rw, "--direct=1", "--ioengine=libaio",
                "--iodepth=" + inFlight, "--numjobs=1", "--output-format=json"));
    }

    /** Runs fio and returns the bandwidth of its first job's {@code side} ("read" or "write"). */
    private static double bytesPerSecond(List<String> cmd, String side) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("fio failed (" + String.join(" ", cmd) + "): " + err.trim());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for fio", e);
        }
        JsonNode job = JSON.readTree(out).path("jobs").path(0).path(side);
        double bw = job.path("bw_bytes").asDouble(Double.NaN);
        if (!(bw > 0)) {
            throw new IOException("fio reported no bandwidth: " + new String(out, StandardCharsets.UTF_8).lines().limit(20).toList());
        }
        return bw;
    }

    /** Removes the files fio laid out. */
    public static void cleanUp(Path directory) {
        try {
            Files.deleteIfExists(directory.resolve(FILE));
            Files.deleteIfExists(directory.resolve(VERIFIED_FILE));
        } catch (IOException e) {
            Log.warn("bench", String.format(Locale.ROOT, "could not remove fio's files in %s: %s", directory, e.getMessage()));
        }
    }
}
