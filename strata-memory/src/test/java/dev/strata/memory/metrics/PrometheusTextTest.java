package dev.strata.memory.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PrometheusTextTest {

    @Test
    void writesFamiliesOnceAndEscapesLabels() {
        PrometheusText t = new PrometheusText()
                .family("strata_tier_used_bytes", PrometheusText.Type.GAUGE, "Bytes allocated")
                .sample("strata_tier_used_bytes", 4096, "tier", "host")
                .family("strata_tier_used_bytes", PrometheusText.Type.GAUGE, "Bytes allocated")
                .sample("strata_tier_used_bytes", 1.5, "tier", "a\"b\\c\nd")
                .sample("strata_tier_used_bytes", Double.NaN);
        assertThat(t.toString()).isEqualTo("""
                # HELP strata_tier_used_bytes Bytes allocated
                # TYPE strata_tier_used_bytes gauge
                strata_tier_used_bytes{tier="host"} 4096
                strata_tier_used_bytes{tier="a\\"b\\\\c\\nd"} 1.5
                strata_tier_used_bytes NaN
                """);
    }

    @Test
    void samplesOfOneFamilyFromSeveralWritersStayTogether() {
        PrometheusText t = new PrometheusText();
        // two writers, each declaring the families it contributes to, interleaved
        t.family("a_total", PrometheusText.Type.COUNTER, "A\\ with\nnewline").sample("a_total", 1, "w", "1");
        t.family("b", PrometheusText.Type.GAUGE, "B").sample("b", 2, "w", "1");
        t.family("a_total", PrometheusText.Type.COUNTER, "A again").sample("a_total", 3, "w", "2");
        t.family("b", PrometheusText.Type.GAUGE, "B").sample("b", 4, "w", "2");
        assertThat(t.toString()).isEqualTo("""
                # HELP a_total A\\\\ with\\nnewline
                # TYPE a_total counter
                a_total{w="1"} 1
                a_total{w="2"} 3
                # HELP b B
                # TYPE b gauge
                b{w="1"} 2
                b{w="2"} 4
                """);
    }

    @Test
    void histogramWritesCumulativeBucketsSumAndCount() {
        PrometheusText t = new PrometheusText().family("lat_seconds", PrometheusText.Type.HISTOGRAM, "Latency")
                .histogram("lat_seconds", new double[] {0.5, 1, 2.5}, new long[] {1, 0, 2, 3}, 12.25, "path", "/x");
        assertThat(t.toString()).isEqualTo("""
                # HELP lat_seconds Latency
                # TYPE lat_seconds histogram
                lat_seconds_bucket{path="/x",le="0.5"} 1
                lat_seconds_bucket{path="/x",le="1"} 1
                lat_seconds_bucket{path="/x",le="2.5"} 3
                lat_seconds_bucket{path="/x",le="+Inf"} 6
                lat_seconds_sum{path="/x"} 12.25
                lat_seconds_count{path="/x"} 6
                """);
        assertThatThrownBy(() -> new PrometheusText().family("h", PrometheusText.Type.HISTOGRAM, "H")
                .histogram("h", new double[] {1, 1}, new long[] {0, 0, 0}, 0))
                .hasMessageContaining("strictly ascending").hasMessageContaining("[1.0, 1.0]");
        assertThatThrownBy(() -> new PrometheusText().family("h", PrometheusText.Type.HISTOGRAM, "H")
                .histogram("h", new double[] {1}, new long[] {0}, 0)).hasMessageContaining("needs 2 bucket counts, got 1");
        assertThatThrownBy(() -> new PrometheusText().family("h", PrometheusText.Type.GAUGE, "H")
                .histogram("h", new double[] {1}, new long[] {0, 0}, 0)).hasMessageContaining("'h' is not a declared histogram");
        assertThatThrownBy(() -> new PrometheusText().family("h", PrometheusText.Type.HISTOGRAM, "H")
                .histogram("h", new double[] {1}, new long[] {0, 0}, 0, "le", "x")).hasMessageContaining("'le'");
    }

    @Test
    void summaryWritesQuantilesAndCount() {
        PrometheusText t = new PrometheusText().family("drain_seconds", PrometheusText.Type.SUMMARY, "Drain")
                .summary("drain_seconds", new double[] {0.5, 0.99, 1}, new double[] {0.25, 0.5, 2}, 7, "peer", "p1");
        assertThat(t.toString()).isEqualTo("""
                # HELP drain_seconds Drain
                # TYPE drain_seconds summary
                drain_seconds{peer="p1",quantile="0.5"} 0.25
                drain_seconds{peer="p1",quantile="0.99"} 0.5
                drain_seconds{peer="p1",quantile="1"} 2
                drain_seconds_count{peer="p1"} 7
                """);
        assertThatThrownBy(() -> new PrometheusText().family("s", PrometheusText.Type.SUMMARY, "S")
                .summary("s", new double[] {1.5}, new double[] {0}, 0)).hasMessageContaining("[0, 1], got 1.5");
    }

    @Test
    void rejectsBadNames() {
        PrometheusText ok = new PrometheusText().family("ok", PrometheusText.Type.GAUGE, "ok");
        assertThatThrownBy(() -> new PrometheusText().family("1bad", PrometheusText.Type.GAUGE, "x")).hasMessageContaining("'1bad'");
        assertThatThrownBy(() -> ok.sample("ok", 1, "bad-label", "x")).hasMessageContaining("'bad-label'");
        assertThatThrownBy(() -> ok.sample("ok", 1, "a:b", "x")).hasMessageContaining("'a:b'");
        assertThatThrownBy(() -> ok.sample("ok", 1, "odd")).hasMessageContaining("pairs");
        assertThatThrownBy(() -> ok.sample("ok", 1, "l", "1", "l", "2")).hasMessageContaining("label 'l' twice");
    }

    @Test
    void rejectsWhatWouldMakeTheExpositionInvalid() {
        assertThatThrownBy(() -> new PrometheusText().family("requests", PrometheusText.Type.COUNTER, "x"))
                .hasMessage("counter family 'requests' must end in _total");
        assertThatThrownBy(() -> new PrometheusText().family("x_bytes", PrometheusText.Type.GAUGE, "x")
                .family("x_bytes", PrometheusText.Type.COUNTER, "x"))
                .hasMessage("family 'x_bytes' was declared as gauge and now as counter");
        assertThatThrownBy(() -> new PrometheusText().sample("nowhere", 1))
                .hasMessageContaining("'nowhere' belongs to no declared family");
        assertThatThrownBy(() -> new PrometheusText().family("g", PrometheusText.Type.GAUGE, "x").sample("g_count", 1))
                .hasMessageContaining("'g_count' belongs to no declared family");
        assertThatThrownBy(() -> new PrometheusText().family("g", PrometheusText.Type.GAUGE, "x")
                .sample("g", 1, "t", "a").sample("g", 2, "t", "a"))
                .hasMessage("series g{t=\"a\"} was already written");
        assertThatThrownBy(() -> new PrometheusText().family("lat", PrometheusText.Type.SUMMARY, "x")
                .family("lat_count", PrometheusText.Type.GAUGE, "x"))
                .hasMessageContaining("'lat_count'").hasMessageContaining("family 'lat'");
    }
}
