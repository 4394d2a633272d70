package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.xpath.XPathConstants;
import javax.xml.xpath.XPathFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;

class ReportWriterTest {

    @TempDir
    Path dir;

    /** A small hand-built report: a met ratio, an inconclusive one, a value goal, a missing figure, two plots. */
    private static BenchReport report() {
        Paired copy = Paired.of(new double[] {9.6, 9.0, 10.0}, new double[] {9.1, 9.3, 9.9});
        Paired noisy = Paired.of(new double[] {10, 10, 10}, new double[] {8, 9.5, 11});
        return new BenchReport("tiers", "test machine", false, List.of(
                Figure.paired("host_to_device_copy_256KiB", "GB/s", "raw MemorySegment.copy", copy, ">= 0.9")
                        .withNote("submitBatch <16 MiB> & two in flight"),
                Figure.paired("pool_to_host_copy_16KiB", "GB/s", "raw MemorySegment.copy", noisy, ">= 0.9"),
                Figure.sampled("store_put_ops", "ops/s", "ConcurrentHashMap.put", Sample.of(4.0e6, 4.2e6, 3.9e6), 2.0e7,
                        ">= 5000000 ops/s"),
                Figure.missing("disk_read_256KiB_qd4", "GB/s", "fio", ">= 0.9", "fio absent")),
                List.of("a note"),
                List.of(new NoiseProbe.NoiseReading("memory copy 64 MiB", "GB/s", "start", 9, 8.9, 17, 5)),
                List.of(new Series("mooncake miss curve", "lru", "capacity (blocks)", "hit ratio", true,
                                new double[] {1000, 5000, 20000}, new double[] {0.2, 0.4, 0.5}),
                        new Series("mooncake miss curve", "Belady's optimum", "capacity (blocks)", "hit ratio", true,
                                new double[] {1000, 5000, 20000}, new double[] {0.3, 0.5, 0.6}),
                        new Series("revocation (CDF)", "idle lease", "latency (us)", "fraction at or below", true,
                                new double[] {1, 2, 9}, new double[] {0.5, 0.99, 1})));
    }

    @Test
    void jsonAddsSpreadsVerdictsNoiseAndSeriesToTheSharedShape() throws Exception {
        BenchReport report = report();
        Path json = ReportWriter.write(report, dir);
        JsonNode root = new ObjectMapper().readTree(json.toFile());
        assertThat(root.fieldNames()).toIterable().containsExactly("scenario", "machine", "quick", "figures", "notes", "noise",
                "series");
        JsonNode first = root.path("figures").path(0);
        assertThat(first.fieldNames()).toIterable().containsExactly("name", "value", "unit", "baseline", "baseline_value",
                "ratio", "goal", "met", "note", "value_low", "value_high", "ratio_low", "ratio_high", "rounds", "verdict");
        assertThat(first.path("verdict").asText()).isEqualTo("met");
        assertThat(first.path("met").asBoolean()).isTrue();
        assertThat(first.path("rounds").asInt()).isEqualTo(3);
        assertThat(root.path("figures").path(1).path("verdict").asText()).isEqualTo("inconclusive");
        assertThat(root.path("figures").path(1).path("met").asBoolean()).isFalse();
        assertThat(root.path("figures").path(2).path("verdict").asText()).as("goal on the value").isEqualTo("missed");
        assertThat(root.path("figures").path(3).path("value").isNull()).isTrue();
        assertThat(root.path("figures").path(3).path("verdict").asText()).isEqualTo("not judged");
        assertThat(root.path("noise").path(0).path("high").asDouble()).isEqualTo(17);
        assertThat(root.path("series").path(0).path("log_x").asBoolean()).isTrue();
        BenchReport back = ReportWriter.read(json);
        assertThat(back.figures()).extracting(Figure::verdict).containsExactly(Verdict.MET, Verdict.INCONCLUSIVE,
                Verdict.MISSED, Verdict.NOT_JUDGED);
        Figure notMeasured = back.figures().get(3);
        assertThat(notMeasured.value()).as("null in the JSON reads back as NaN, not 0").isNaN();
        assertThat(notMeasured.ratio()).isNaN();
        assertThat(back.figures().get(0).value()).isEqualTo(report().figures().get(0).value());
        assertThat(back.series()).hasSize(3);
        assertThat(back.noise()).hasSize(1);
    }

    @Test
    void aReportWrittenBeforeVerdictsExistedStillReads() throws Exception {
        Path old = Files.writeString(dir.resolve("old.json"), """
                {"scenario": "tiers", "machine": "m", "quick": false, "notes": [],
                 "figures": [{"name": "a", "value": 2, "unit": "GB/s", "baseline": "b", "baseline_value": 1, "ratio": 2,
                              "goal": ">= 0.9", "met": true, "note": ""},
                             {"name": "c", "value": 1, "unit": "GB/s", "baseline": "b", "baseline_value": 2, "ratio": 0.5,
                              "goal": ">= 0.9", "met": false, "note": ""}]}
                """);
        BenchReport r = ReportWriter.read(old);
        assertThat(r.figures()).extracting(Figure::verdict).containsExactly(Verdict.MET, Verdict.MISSED);
        assertThat(r.noise()).isEmpty();
        assertThat(r.series()).isEmpty();
    }

    @Test
    void htmlIsWellFormedWithGoalLinesWhiskersVerdictColoursAndPlots() throws Exception {
        ReportWriter.write(report(), dir);
        String html = Files.readString(dir.resolve("tiers.html"));
        assertThat(html).as("no scripts, nothing fetched").doesNotContain("<script", "src=", "href=\"http", "@import")
                .contains("&lt;16 MiB&gt; &amp; two in flight");
        Document doc = parse(html);
        var xp = XPathFactory.newInstance().newXPath();
        NodeList rows = (NodeList) xp.evaluate("//*[local-name()='svg'][@class='ratios']/*[local-name()='g'][starts-with(@class,"
                + "'figure')]", doc, XPathConstants.NODESET);
        assertThat(rows.getLength()).as("one row per figure with a ratio (the missing one has none)").isEqualTo(3);
        assertThat(count(xp, doc, "//*[local-name()='line'][@class='goal']")).as("a goal line per row").isEqualTo(3);
        assertThat(count(xp, doc, "//*[local-name()='g'][@class='whisker']")).as("a whisker per row").isEqualTo(3);
        assertThat(xp.evaluate("//*[local-name()='g'][contains(@class,'inconclusive')]/*[local-name()='rect']/@fill", doc))
                .isEqualTo("#e6a817");
        assertThat(xp.evaluate("//*[local-name()='g'][contains(@class,'inconclusive')]/*[local-name()='title']", doc))
                .contains("pool_to_host_copy_16KiB").contains("inconclusive");
        assertThat(count(xp, doc, "//*[local-name()='svg'][@class='plot']")).as("two plots from three series").isEqualTo(2);
        assertThat(count(xp, doc, "//*[local-name()='polyline']")).isEqualTo(3);
        assertThat(xp.evaluate("//*[local-name()='svg'][@class='plot'][1]", doc)).contains("Belady's optimum")
                .contains("capacity (blocks) (log scale)");
        assertThat(count(xp, doc, "//*[local-name()='table'][@class='noise']//*[local-name()='tr']")).isEqualTo(2);
        assertThat(count(xp, doc, "//*[local-name()='details']")).as("notes folded away").isEqualTo(2);
        assertThat(html).contains("4 figures: 1 met, 1 missed, 1 inconclusive, 1 not judged");
    }

    @Test
    void theTablePrintsNoiseSpreadsAndVerdicts() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ReportWriter.printTable(report(), new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).contains("noise: memory copy 64 MiB at start: 9.00 GB/s, min-max 8.90-17.0 (90.0%), 5 runs")
                .contains("[0.800, 1.100]").contains("inconclusive").contains("not judged");
    }

    @Test
    void theIndexListsEachScenariosVerdictCountsOrItsFailure() throws Exception {
        List<BenchRunner.Outcome> outcomes = new ArrayList<>();
        outcomes.add(new BenchRunner.Outcome("tiers", report(), null));
        outcomes.add(new BenchRunner.Outcome("kv", null, "IllegalStateException: boom <here>"));
        Path index = ReportWriter.writeIndex(outcomes, dir);
        Document doc = parse(Files.readString(index));
        var xp = XPathFactory.newInstance().newXPath();
        assertThat(xp.evaluate("//*[local-name()='a']/@href", doc)).isEqualTo("tiers.html");
        assertThat(xp.evaluate("//*[local-name()='td'][@class='inconclusive']", doc)).isEqualTo("1");
        assertThat(xp.evaluate("//*[local-name()='tr'][3]", doc)).contains("kv").contains("failed: IllegalStateException: boom <here>");
    }

    static Document parse(String html) throws Exception {
        var f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", false);
        f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        return f.newDocumentBuilder().parse(new InputSource(new StringReader(html)));
    }

    private static int count(javax.xml.xpath.XPath xp, Document doc, String path) throws Exception {
        return ((NodeList) xp.evaluate(path, doc, XPathConstants.NODESET)).getLength();
    }
}
