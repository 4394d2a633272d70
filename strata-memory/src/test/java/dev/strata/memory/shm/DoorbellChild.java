package dev.strata.memory.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * The other process of {@link DoorbellTest}: {@code FILE ROUNDS}. Maps the file, then ROUNDS
 * times waits for a ring on the word at 0 and answers with a ring on the word at 64; prints
 * {@code ready} before the first wait and {@code done T} at the end, T the waits that slept
 * out their whole timeout instead of being rung.
 */
public final class DoorbellChild {
    private DoorbellChild() {
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[1]);
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(Path.of(args[0]), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment file = ch.map(FileChannel.MapMode.READ_WRITE, 0, DoorbellTest.FILE_BYTES, arena);
            Doorbell ping = Doorbell.at(file, 0);
            Doorbell pong = Doorbell.at(file, 64);
            int seen = ping.sequence();
            int timeouts = 0;
            System.out.println("ready");
            System.out.flush();
            for (int i = 0; i < rounds; i++) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (ping.sequence() == seen) {
                    if (DoorbellTest.ranOut(ping, seen)) {
                        timeouts++;
                    }
                    if (System.nanoTime() > deadline) {
                        System.out.println("stuck in round " + i);
                        System.exit(2);
                    }
                }
                seen = ping.sequence();
                pong.ring();
            }
            System.out.println("done " + timeouts);
        }
    }
}
