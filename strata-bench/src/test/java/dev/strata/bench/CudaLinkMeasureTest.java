package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.device.CudaDriver;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The CUDA host-link measure: no figures and a note saying why on a machine without a device; sixteen on one with. */
class CudaLinkMeasureTest {

    @Test
    void withoutADeviceItSaysWhyAndWithOneItMeasuresEveryDirectionMemoryAndSize() {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = CudaLinkMeasure.figures(true, notes);
        if (CudaDriver.load() instanceof CudaDriver.Unavailable u) {
            assertThat(figures).isEmpty();
            assertThat(notes).containsExactly("no CUDA host-link figures: " + u.reason());
            return;
        }
        assertThat(figures).hasSize(16);
        assertThat(figures).extracting(Figure::name).contains("cuda_host_to_device_pinned_16KiB",
                "cuda_device_to_host_pageable_2MiB", "cuda_host_to_device_pinned_64MiB");
        for (Figure f : figures) {
            assertThat(f.value()).as(f.name()).isPositive().isFinite();
            assertThat(f.unit()).isEqualTo("GB/s");
            FigureChecks.assertConsistent(f);
        }
        assertThat(notes).anyMatch(n -> n.startsWith("CUDA host link measured on device 0: "));
    }
}
