package dev.strata.memory.disk;

import dev.strata.memory.Allocator;
import dev.strata.memory.TierIoException;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A full file system: the tier sits on a small file system mounted for the test and is filled
 * until the kernel answers ENOSPC. A 2 MiB tmpfs exercises buffered I/O; an 8 MiB ext4 image on
 * a loop device exercises direct I/O. Each is skipped, with the reason, where mounting is not
 * permitted, and always unmounted afterwards.
 */
class DiskTierFullDiskTest {

    private static final int OBJECT = 100_003; // bytes per object, odd on purpose

    @TempDir
    Path parent;
    private Path mountPoint;
    private boolean mounted;

    @AfterEach
    void unmount() {
        if (mounted) {
            assertThat(DiskTestSupport.unmount(mountPoint)).as("unmount " + mountPoint).isNull();
        }
    }

    @Test
    void enospcOnTmpfsWithBufferedIo() throws Exception {
        mountPoint = Files.createDirectory(parent.resolve("small-tmpfs"));
        String problem = DiskTestSupport.mount("tmpfs", "size=2m,mode=0700", mountPoint);
        assumeTrue(problem == null, "cannot mount a 2 MiB tmpfs for the full-disk test: " + problem);
        mounted = true;
        fillUntilEnospcThenCheck(IoMode.BUFFERED);
    }

    @Test
    void enospcOnExt4WithDirectIo() throws Exception {
        Path image = parent.resolve("small-ext4.img");
        try (var ch = java.nio.channels.FileChannel.open(image, java.nio.file.StandardOpenOption.CREATE_NEW,
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.truncate(0);
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {1}), (8L << 20) - 1); // an 8 MiB sparse image
        }
        String mkfs = DiskTestSupport.run(List.of("mkfs.ext4", "-q", "-F", "-m", "0", image.toString()));
        assumeTrue(mkfs == null, "cannot make an ext4 image for the full-disk test: " + mkfs);
        mountPoint = Files.createDirectory(parent.resolve("small-ext4"));
        String problem = DiskTestSupport.run(List.of("mount", "-o", "loop", image.toString(), mountPoint.toString()));
        assumeTrue(problem == null, "cannot loop-mount an ext4 image for the full-disk test: " + problem);
        mounted = true;
        FileStoreInfo info = FileStoreInfo.probe(mountPoint);
        assumeFalse(!info.directIoEffective(), "O_DIRECT does not work on the loop-mounted ext4: " + info.describe());
        fillUntilEnospcThenCheck(IoMode.DIRECT);
    }

    private void fillUntilEnospcThenCheck(IoMode expectedMode) throws IOException {
        Path ballast = mountPoint.resolve("ballast");
        Files.write(ballast, DiskTestSupport.randomBytes(400 * 1024, new SplittableRandom(1)));
        long usable = Files.getFileStore(mountPoint).getUsableSpace();
        long capacity = usable + (4L << 20);
        SplittableRandom r = new SplittableRandom(31);
        try (DiskTestSupport.LogCapture log = new DiskTestSupport.LogCapture();
             DiskTier tier = DiskTier.open(DiskTierOptions.in(mountPoint, capacity).name("tiny-disk")
                     .stagingBuffers(2).stagingBufferSize(64 * 1024).deleteOnClose(true));
             Arena arena = Arena.ofConfined()) {
            assertThat(tier.ioMode()).as(tier.description()).isEqualTo(expectedMode);
            assertThat(log.warnings()).as("capacity beyond the usable space is announced with both numbers")
                    .anySatisfy(w -> assertThat(w).contains("exceeds the usable space")
                            .contains(String.valueOf(tier.capacity()))
                            .contains(String.valueOf(tier.fileStore().usableSpace())));

            List<Long> handles = new ArrayList<>();
            List<byte[]> contents = new ArrayList<>();
            TierIoException failure = null;
            long failedHandle = -1;
            while (failure == null) {
                long h = tier.allocate(OBJECT);
                assertThat(h).as("the tier's own capacity must outlast the file system").isNotEqualTo(Allocator.FULL);
                byte[] data = DiskTestSupport.randomBytes(OBJECT, r);
                // alternate staged (heap) and in-place (aligned native) writes
                MemorySegment src = handles.size() % 2 == 0 ? MemorySegment.ofArray(data)
                        : arena.allocate(OBJECT, 4096).copyFrom(MemorySegment.ofArray(data));
                try {
                    tier.write(h, src);
                    handles.add(h);
                    contents.add(data);
                } catch (TierIoException e) {
                    failure = e;
                    failedHandle = h;
                }
            }
            assertThat(handles).as("some objects fit before the file system filled").hasSizeGreaterThan(3);
            assertThat(failure.tier()).isEqualTo("tiny-disk");
            assertThat(failure.getMessage()).contains("tier 'tiny-disk'").contains("write of handle " + failedHandle)
                    .contains(OBJECT + " payload bytes").contains("[file system full]")
                    .contains("ENOSPC (No space left on device)");

            // the failed object is not readable
            assertThat(tier.read(failedHandle, MemorySegment.ofArray(new byte[OBJECT]))).isFalse();

            // every earlier object reads back intact
            for (int i = 0; i < handles.size(); i++) {
                byte[] back = new byte[OBJECT];
                assertThat(tier.read(handles.get(i), MemorySegment.ofArray(back))).isTrue();
                assertThat(back).isEqualTo(contents.get(i));
            }

            // another tier (HOST) is unaffected
            try (HostTier host = HostTier.create("host-beside-full-disk", 4L << 20)) {
                byte[] hostData = DiskTestSupport.randomBytes(1_000_003, r);
                long hh = host.allocate(hostData.length);
                host.write(hh, MemorySegment.ofArray(hostData));
                byte[] hostBack = new byte[hostData.length];
                assertThat(host.read(hh, MemorySegment.ofArray(hostBack))).isTrue();
                assertThat(hostBack).isEqualTo(hostData);
                host.free(hh);
            }

            // a freed object's space is reused for a new one (best fit gives back the same range)
            tier.free(failedHandle);
            long reused = handles.get(1);
            tier.free(reused);
            long again = tier.allocate(OBJECT);
            assertThat(again).isEqualTo(reused);
            byte[] data = DiskTestSupport.randomBytes(OBJECT, r);
            tier.write(again, MemorySegment.ofArray(data));
            byte[] back = new byte[OBJECT];
            assertThat(tier.read(again, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(data);

            // once the file system has space again, writes into fresh space succeed
            Files.delete(ballast);
            assertThat(DiskTestSupport.run(List.of("sync", "-f", mountPoint.toString()))).isNull();
            long fresh = tier.allocate(OBJECT);
            byte[] more = DiskTestSupport.randomBytes(OBJECT, r);
            tier.write(fresh, MemorySegment.ofArray(more));
            assertThat(tier.read(fresh, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(more);
            assertThat(tier.read(handles.getFirst(), MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(contents.getFirst());
        }
    }
}
