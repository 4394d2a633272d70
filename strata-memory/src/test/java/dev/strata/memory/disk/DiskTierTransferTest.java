package dev.strata.memory.disk;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.Link;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The DISK tier behind the transfer engine: a HOST -> DISK -> HOST round trip of many objects
 * with several disk-link workers in flight at once, a missing object, and a corrupt one.
 */
class DiskTierTransferTest {

    @Test
    void hostToDiskAndBackThroughTheTransferEngine(@TempDir Path dir) throws Exception {
        try (HostTier host = HostTier.create("host", 48L << 20);
             DiskTier disk = DiskTier.open(DiskTierOptions.in(dir, 64L << 20).name("disk").dataFiles(2)
                     .stagingBuffers(4).stagingBufferSize(256 * 1024).deleteOnClose(true));
             TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults()
                     .withDiskLinkWorkers(4).withStagingBytes(2L << 20))) {
            SplittableRandom r = new SplittableRandom(61);
            int n = 40;
            List<byte[]> data = new ArrayList<>();
            long[] hostIn = new long[n];
            long[] diskAt = new long[n];
            List<CompletableFuture<TransferResult>> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] bytes = DiskTestSupport.randomBytes(1 + r.nextInt(400_000), r);
                data.add(bytes);
                hostIn[i] = host.allocate(bytes.length);
                host.write(hostIn[i], MemorySegment.ofArray(bytes));
                diskAt[i] = disk.allocate(bytes.length);
                out.add(engine.copy(host, hostIn[i], disk, diskAt[i], bytes.length));
            }
            for (CompletableFuture<TransferResult> f : out) {
                assertThat(f.get(60, TimeUnit.SECONDS).completed()).isTrue();
            }
            Link link = engine.links().stream().filter(l -> l.name().equals("host->disk")).findFirst().orElseThrow();
            assertThat(link.workerCount()).isEqualTo(4);

            List<CompletableFuture<TransferResult>> back = new ArrayList<>();
            long[] hostOut = new long[n];
            for (int i = 0; i < n; i++) {
                host.free(hostIn[i]);
                hostOut[i] = host.allocate(data.get(i).length);
                back.add(engine.copy(disk, diskAt[i], host, hostOut[i], data.get(i).length));
            }
            for (int i = 0; i < n; i++) {
                assertThat(back.get(i).get(60, TimeUnit.SECONDS).completed()).isTrue();
                byte[] got = new byte[data.get(i).length];
                assertThat(host.read(hostOut[i], MemorySegment.ofArray(got))).isTrue();
                assertThat(got).as("object %d", i).isEqualTo(data.get(i));
            }
            assertThat(disk.stats().writeOps()).isEqualTo(n);
            assertThat(disk.stats().readOps()).isEqualTo(n);

            // a disk allocation never written is NOT_FOUND, not an error
            long empty = disk.allocate(1000);
            long landing = host.allocate(1000);
            assertThat(engine.copy(disk, empty, host, landing, 1000).get(60, TimeUnit.SECONDS).notFound()).isTrue();

            // a corrupt object fails its transfer with the checksum error, and the link carries on
            DiskTier.Location at = disk.location(diskAt[0]);
            try (FileChannel ch = FileChannel.open(at.file(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer one = ByteBuffer.allocate(1);
                ch.read(one, at.payloadOffset());
                one.put(0, (byte) (one.get(0) ^ 0x21)).rewind();
                ch.write(one, at.payloadOffset());
                ch.force(true);
            }
            assertThatThrownBy(() -> engine.copy(disk, diskAt[0], host, hostOut[0], data.get(0).length).join())
                    .isInstanceOf(CompletionException.class).hasRootCauseInstanceOf(CorruptObjectException.class);
            assertThat(engine.copy(disk, diskAt[1], host, hostOut[1], data.get(1).length)
                    .get(60, TimeUnit.SECONDS).completed()).isTrue();
        }
    }
}
