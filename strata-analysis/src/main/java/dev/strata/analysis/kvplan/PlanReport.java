package dev.strata.analysis.kvplan;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.strata.cache.kv.KvGeometry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Renders a {@link KvCapacityPlan} as a table for people or as JSON for tools. Text sizes are in
 * decimal units (GB = 10⁹ bytes), as memory and link vendors quote them; JSON carries exact bytes,
 * bytes per second and nanoseconds.
 *
 * <p>Stateless; any thread.
 */
public final class PlanReport {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private PlanReport() {
    }

    /** The plan as a table. */
    public static String text(KvCapacityPlan plan) {
        PlanRequest r = plan.request();
        ModelSpec m = r.model();
        KvGeometry g = plan.rankGeometry();
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "model     %s: %d layers, %d attention heads, %d KV heads x %d dims, %s KV%n",
                m.name(), m.layers(), m.attentionHeads(), m.kvHeads(), m.headDim(), g.dtype().label()));
        if (m.isMoe()) {
            b.append(String.format(Locale.ROOT, "experts   %d per layer, %d per token, %s per expert per layer (%s)%n", m.experts(),
                    m.expertsPerToken(), decimal(m.expertBytes()), m.dtype().label()));
        }
        b.append(String.format(Locale.ROOT, "split     tp %d: %d KV head%s per rank%n", r.tp(), g.kvHeads(),
                g.kvHeads() == 1 ? "" : "s"));
        b.append(String.format(Locale.ROOT, "block     %d tokens = %s per rank (%s per token)%n", g.blockTokens(),
                decimal(plan.blockBytes()), decimal(g.bytesPerToken())));
        b.append(String.format(Locale.ROOT, "sequence  %d tokens = %d blocks = %s per rank%n%n", r.seqTokens(),
                plan.blocksPerSequence(), decimal(plan.blocksPerSequence() * plan.blockBytes())));

        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"tier", "KV memory", "blocks", "sequences"});
        for (KvCapacityPlan.TierCapacity t : plan.tiers()) {
            rows.add(new String[] {t.tier(), decimal(t.kvBytes()), count(t.blocks()), count(t.sequences())});
        }
        rows.add(new String[] {"total", "", count(plan.totalBlocks()), count(plan.totalSequences())});
        b.append(String.format(Locale.ROOT, "capacity per rank (device: %s - %s weights - %s overhead; sequences of %d tokens)%n",
                decimal(r.deviceBytes()), decimal(r.weightsPerDevice()), decimal(r.overheadBytes()), r.seqTokens()));
        table(b, rows, new boolean[] {false, true, true, true});
        KvCapacityPlan.ClusterCapacity c = plan.cluster();
        if (c != null) {
            b.append(String.format(Locale.ROOT, "cluster   %s shared by %d machine%s: %s blocks of the model (%s sequences), each rank's share "
                            + "a value of %s (its block and a %d B header); %s blocks (%s sequences) per machine when they share no prefix%n",
                    decimal(c.bytes()), c.machines(), c.machines() == 1 ? "" : "s", count(c.blocks()), count(c.sequences()),
                    decimal(c.valueBytes()), KvCapacityPlanner.CLUSTER_VALUE_HEADER_BYTES, count(c.blocksPerMachine()),
                    count(c.sequencesPerMachine())));
        }

        if (!plan.links().isEmpty()) {
            b.append(String.format(Locale.ROOT, "%ntransfer budget per decode step of %s (per rank)%n", duration(r.decodeStepNanos())));
            List<String[]> links = new ArrayList<>();
            links.add(new String[] {"link", "bandwidth", "per block", "blocks/step", "tokens/step", "per sequence"});
            for (KvCapacityPlan.LinkBudget l : plan.links()) {
                links.add(new String[] {l.link(), decimal(l.bytesPerSecond()) + "/s", duration(l.nanosPerBlock()),
                        count(l.blocksPerStep()), count(l.tokensPerStep()), duration(l.nanosPerSequence())});
            }
            table(b, links, new boolean[] {false, true, true, true, true, true});
        }
        return b.toString();
    }

    /** The plan as a JSON object (exact integers: bytes, bytes per second, nanoseconds). */
    public static String json(KvCapacityPlan plan) {
        PlanRequest r = plan.request();
        ModelSpec m = r.model();
        KvGeometry g = plan.rankGeometry();
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("name", m.name());
        model.put("layers", m.layers());
        model.put("attention_heads", m.attentionHeads());
        model.put("kv_heads", m.kvHeads());
        model.put("head_dim", m.headDim());
        model.put("hidden_size", m.hiddenSize());
        model.put("dtype", m.dtype().label());
        if (m.isMoe()) {
            model.put("experts", m.experts());
            model.put("experts_per_token", m.expertsPerToken());
            model.put("expert_intermediate_size", m.expertIntermediate());
            model.put("expert_bytes", m.expertBytes());
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("model", model);
        root.put("tp", r.tp());
        root.put("kv_dtype", g.dtype().label());
        root.put("kv_heads_per_rank", g.kvHeads());
        root.put("block_tokens", g.blockTokens());
        root.put("block_bytes_per_rank", plan.blockBytes());
        root.put("bytes_per_token_per_rank", g.bytesPerToken());
        root.put("seq_tokens", r.seqTokens());
        root.put("blocks_per_sequence", plan.blocksPerSequence());
        root.put("device_bytes", r.deviceBytes());
        root.put("weights_per_device_bytes", r.weightsPerDevice());
        root.put("overhead_bytes", r.overheadBytes());
        List<Map<String, Object>> tiers = new ArrayList<>();
        for (KvCapacityPlan.TierCapacity t : plan.tiers()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("tier", t.tier());
            row.put("kv_bytes", t.kvBytes());
            row.put("blocks", t.blocks());
            row.put("sequences", t.sequences());
            tiers.add(row);
        }
        root.put("tiers", tiers);
        root.put("total_blocks", plan.totalBlocks());
        root.put("total_sequences", plan.totalSequences());
        KvCapacityPlan.ClusterCapacity c = plan.cluster();
        if (c != null) {
            Map<String, Object> cluster = new LinkedHashMap<>();
            cluster.put("bytes", c.bytes());
            cluster.put("machines", c.machines());
            cluster.put("value_bytes", c.valueBytes());
            cluster.put("blocks", c.blocks());
            cluster.put("sequences", c.sequences());
            cluster.put("blocks_per_machine", c.blocksPerMachine());
            cluster.put("sequences_per_machine", c.sequencesPerMachine());
            root.put("cluster", cluster);
        }
        root.put("decode_step_ns", r.decodeStepNanos());
        List<Map<String, Object>> links = new ArrayList<>();
        for (KvCapacityPlan.LinkBudget l : plan.links()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("link", l.link());
            row.put("bytes_per_second", l.bytesPerSecond());
            row.put("ns_per_block", Math.round(l.nanosPerBlock()));
            row.put("blocks_per_step", l.blocksPerStep());
            row.put("tokens_per_step", l.tokensPerStep());
            row.put("ns_per_sequence", Math.round(l.nanosPerSequence()));
            links.add(row);
        }
        root.put("links", links);
        try {
            return JSON.writeValueAsString(root) + System.lineSeparator();
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("plan could not be written as JSON", e);
        }
    }

    /** A byte count in decimal units, e.g. {@code 1.31 MB}, {@code 45.50 GB}, {@code 512 B}. */
    public static String decimal(long bytes) {
        String[] units = {"KB", "MB", "GB", "TB", "PB"};
        if (Math.abs(bytes) < 1000) {
            return bytes + " B";
        }
        double v = bytes;
        int u = -1;
        while (Math.abs(v) >= 1000 && u < units.length - 1) {
            v /= 1000;
            u++;
        }
        return String.format(Locale.ROOT, "%.2f %s", v, units[u]);
    }

    /** A duration in ns as {@code 54.6 us}, {@code 14.0 ms}, {@code 2.10 s}. */
    public static String duration(double nanos) {
        if (nanos < 1_000) {
            return String.format(Locale.ROOT, "%.0f ns", nanos);
        }
        if (nanos < 1_000_000) {
            return String.format(Locale.ROOT, "%.1f us", nanos / 1e3);
        }
        if (nanos < 1_000_000_000) {
            return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f s", nanos / 1e9);
    }

    private static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    private static void table(StringBuilder b, List<String[]> rows, boolean[] rightAligned) {
        int[] widths = new int[rows.getFirst().length];
        for (String[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                if (i > 0) {
                    line.append("  ");
                }
                String cell = row[i];
                String pad = " ".repeat(widths[i] - cell.length());
                line.append(rightAligned[i] ? pad + cell : cell + pad);
            }
            b.append(line.toString().stripTrailing()).append(System.lineSeparator());
        }
    }
}
