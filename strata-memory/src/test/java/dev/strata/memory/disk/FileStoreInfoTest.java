package dev.strata.memory.disk;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class FileStoreInfoTest {

    @Test
    void diskBackedTempDirectoryAcceptsDirectIo(@TempDir Path dir) throws Exception {
        FileStoreInfo info = FileStoreInfo.probe(dir);
        assumeFalse(info.memoryBacked(), "the temporary directory is on " + info.type() + ", not a disk");
        assertThat(info.directIoAccepted()).as(info.describe()).isTrue();
        assertThat(info.directIoProblem()).isNull();
        assertThat(info.directIoEffective()).isTrue();
        assertThat(info.blockSize()).isPositive();
        assertThat(Long.bitCount(info.blockSize())).isEqualTo(1);
        assertThat(info.usableSpace()).isPositive().isLessThanOrEqualTo(info.totalSpace());
        assertThat(info.describe()).contains(info.type()).contains("block " + info.blockSize()).contains("O_DIRECT works");
        try (var files = Files.list(dir)) {
            assertThat(files).as("the probe file is removed").isEmpty();
        }
    }

    @Test
    void devShmIsMemoryBackedSoDirectIoIsNotEffective() throws Exception {
        Path dir = DiskTestSupport.shmDirectory("strata-fsinfo-");
        assumeTrue(dir != null, "no writable /dev/shm");
        try {
            FileStoreInfo info = FileStoreInfo.probe(dir);
            assertThat(info.type()).isEqualTo("tmpfs");
            assertThat(info.memoryBacked()).isTrue();
            assertThat(info.directIoEffective()).isFalse();
            assertThat(info.describe()).contains("tmpfs");
        } finally {
            DiskTestSupport.deleteTree(dir);
        }
    }
}
