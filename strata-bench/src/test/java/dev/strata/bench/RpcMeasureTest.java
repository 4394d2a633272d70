package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The RPC measure in quick mode yields well-formed figures (never judged on speed here). */
class RpcMeasureTest {

    @Test
    void quickRunYieldsTheFourFiguresWellFormed() throws Exception {
        List<Figure> figures = RpcMeasure.figures(true);
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
    }
}
