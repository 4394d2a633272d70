package dev.strata.bench;

import dev.strata.memory.log.Log;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code strata bench experts}: MoE expert paging and the expert/KV memory split. The pager's
 * step with all hits against a plain lookup and with one miss against the raw copy of the
 * expert; reuse-distance processing (exact LRU miss curves) against a stack walk; and MV-WSA's
 * simulated latency on generated workloads against the brute-force oracle, the 50-50 split and
 * the KV-blind split.
 *
 * <p>Runs on the calling thread.
 */
public final class ExpertsScenario implements Scenario {

    @Override
    public String name() {
        return "experts";
    }

    @Override
    public String description() {
        return "expert pager steps, reuse-distance rate, MV-WSA split vs oracle, 50-50 and KV-blind";
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        List<Figure> figures = new ArrayList<>();
        Progress progress = new Progress(Log.stream("bench"), 3);
        progress.step("expert pager: top-8 of 128, all hits and one miss");
        figures.addAll(ExpertPagerMeasure.measure(options.quick(), Log.stream("bench")));
        progress.step("reuse distances of a generated expert stream and a KV block stream");
        figures.addAll(ReuseDistanceMeasure.figures(options.quick(), Log.stream("bench")));
        progress.step("MV-WSA on generated workloads against the oracle, 50-50 and KV-blind splits");
        figures.addAll(MvWsaMeasure.figures(options.quick(), Log.stream("bench")));
        return figures;
    }
}
