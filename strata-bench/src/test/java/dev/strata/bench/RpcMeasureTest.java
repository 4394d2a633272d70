package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The RPC measure in quick mode yields well-formed figures and latency CDFs (never judged on speed here). */
class RpcMeasureTest {

    @Test
    void quickRunYieldsTheFourFiguresWellFormedAndThreeLatencyCdfs() throws Exception {
        List<Series> plots = new java.util.ArrayList<>();
        List<Figure> figures = RpcMeasure.figures(true, plots);
        assertThat(figures).extracting(Figure::name).containsExactly("shm_ping_pong_round_trip", "rpc_round_trip",
                "rpc_vs_tcp_round_trip", "rpc_batched_throughput");
        for (Figure f : figures) {
            assertThat(f.value()).as(f.name()).isFinite().isPositive();
            assertThat(f.baselineValue()).as(f.name()).isFinite().isPositive();
            FigureChecks.assertConsistent(f);
            assertThat(f.unit()).as(f.name()).isNotBlank();
            assertThat(f.baseline()).as(f.name()).isNotBlank();
        }
        assertThat(figures.get(1).unit()).isEqualTo("ns");
        assertThat(figures.get(3).unit()).isEqualTo("requests/s");
        assertThat(Goal.parse(figures.get(3).goal()).onValue()).isTrue();
        assertThat(plots).hasSize(3).allSatisfy(p -> {
            assertThat(p.plot()).isEqualTo(RpcMeasure.CDF_PLOT);
            assertThat(p.logX()).isTrue();
            double[] x = p.x();
            double[] y = p.y();
            for (int i = 1; i < x.length; i++) { // a distribution: latencies and fractions never decrease
                assertThat(x[i]).as(p.label()).isGreaterThanOrEqualTo(x[i - 1]);
                assertThat(y[i]).as(p.label()).isGreaterThan(y[i - 1]);
            }
            assertThat(y[y.length - 1]).isEqualTo(1.0);
        });
        assertThat(plots).extracting(Series::label).anyMatch(l -> l.startsWith("RPC call")).anyMatch(l -> l.startsWith("raw"))
                .anyMatch(l -> l.startsWith("loopback TCP"));
    }
}
