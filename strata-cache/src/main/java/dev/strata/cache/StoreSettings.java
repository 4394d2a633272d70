package dev.strata.cache;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The configuration of a {@link TieredStore}, as written in a YAML file: the demotion chain by
 * tier name, top first, with each tier's watermarks and policy, and the promotion rule.
 *
 * <pre>
 * tiers:
 *   - name: device
 *     high-watermark: 0.90     # fraction of capacity; default 0.95
 *     low-watermark: 0.75      # default 0.85
 *     policy: priority-lru     # priority-lru (default) | lru | tiny-lfu
 *   - name: host
 *     policy: tiny-lfu
 * promotion: to-top            # to-top (default) | never | one-level-up | to-top-after
 * promote-after: 2             # hits before promotion, for to-top-after
 * </pre>
 *
 * <p>{@link #conclude()} checks everything and fails fast with a message naming the offending
 * value; {@link #builder(Map)} binds the tier names to the tiers the process opened.
 *
 * <p>Immutable; any thread.
 *
 * @param tiers        the chain, top first
 * @param promotion    the promotion rule's name
 * @param promoteAfter hits before promotion (used by {@code to-top-after}), at least 1
 */
public record StoreSettings(List<TierSettings> tiers, String promotion, int promoteAfter) {

    /**
     * One tier of the chain.
     *
     * @param name          the tier's name (as the tier reports it)
     * @param highWatermark fraction of capacity that triggers eviction
     * @param lowWatermark  fraction of capacity eviction returns to
     * @param policy        the eviction policy
     */
    public record TierSettings(String name, double highWatermark, double lowWatermark, PolicyKind policy) {
    }

    private static final Set<String> TOP_KEYS = Set.of("tiers", "promotion", "promote-after");
    private static final Set<String> TIER_KEYS = Set.of("name", "high-watermark", "low-watermark", "policy");
    private static final Set<String> PROMOTIONS = Set.of("to-top", "never", "one-level-up", "to-top-after");

    public StoreSettings {
        tiers = List.copyOf(tiers);
    }

    /** Reads and checks settings from a YAML file. */
    public static StoreSettings fromYaml(Path file) {
        try {
            return fromYaml(Files.readString(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read store settings from " + file + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    /** Parses and checks settings from YAML text. */
    public static StoreSettings fromYaml(String yaml) {
        JsonNode root;
        try {
            root = new ObjectMapper(new YAMLFactory()).readTree(yaml);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("store settings are not valid YAML: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("store settings must be a YAML mapping with a 'tiers' list");
        }
        checkKeys(root, TOP_KEYS, "store settings");
        JsonNode tierList = root.get("tiers");
        if (tierList == null || !tierList.isArray() || tierList.isEmpty()) {
            throw new IllegalArgumentException("store settings need a non-empty 'tiers' list");
        }
        List<TierSettings> tiers = new ArrayList<>();
        for (JsonNode t : tierList) {
            if (!t.isObject() || !t.hasNonNull("name")) {
                throw new IllegalArgumentException("each entry of 'tiers' needs a 'name', got: " + t);
            }
            String name = t.get("name").asText();
            checkKeys(t, TIER_KEYS, "tier '" + name + "'");
            double high = number(t, "high-watermark", TieredStore.Builder.DEFAULT_HIGH, name);
            double low = number(t, "low-watermark", TieredStore.Builder.DEFAULT_LOW, name);
            PolicyKind policy = t.hasNonNull("policy") ? PolicyKind.parse(t.get("policy").asText()) : PolicyKind.PRIORITY_LRU;
            tiers.add(new TierSettings(name, high, low, policy));
        }
        String promotion = root.hasNonNull("promotion") ? root.get("promotion").asText() : "to-top";
        int after = 1;
        if (root.has("promote-after")) {
            JsonNode n = root.get("promote-after");
            if (!n.canConvertToInt()) {
                throw new IllegalArgumentException("'promote-after' must be a whole number, got " + n);
            }
            after = n.asInt();
        }
        return new StoreSettings(tiers, promotion, after).conclude();
    }

    private static void checkKeys(JsonNode node, Set<String> allowed, String where) {
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!allowed.contains(key)) {
                throw new IllegalArgumentException("unknown key '" + key + "' in " + where + " (known: " + allowed + ")");
            }
        }
    }

    private static double number(JsonNode tier, String key, double fallback, String name) {
        JsonNode n = tier.get(key);
        if (n == null || n.isNull()) {
            return fallback;
        }
        if (!n.isNumber()) {
            throw new IllegalArgumentException("tier '" + name + "': '" + key + "' must be a number, got " + n);
        }
        return n.asDouble();
    }

    /** Checks the settings; throws {@link IllegalArgumentException} naming the offending value. */
    public StoreSettings conclude() {
        if (tiers.isEmpty()) {
            throw new IllegalArgumentException("store settings need at least one tier");
        }
        Set<String> names = new HashSet<>();
        for (TierSettings t : tiers) {
            if (t.name() == null || t.name().isBlank()) {
                throw new IllegalArgumentException("a tier needs a name");
            }
            if (!names.add(t.name())) {
                throw new IllegalArgumentException("tier '" + t.name() + "' appears twice in the chain");
            }
            if (!(t.lowWatermark() > 0 && t.lowWatermark() <= t.highWatermark() && t.highWatermark() <= 1.0)) {
                throw new IllegalArgumentException("tier '" + t.name() + "': watermarks must satisfy 0 < low <= high <= 1, got low "
                        + t.lowWatermark() + ", high " + t.highWatermark());
            }
            if (t.policy() == null) {
                throw new IllegalArgumentException("tier '" + t.name() + "' needs a policy");
            }
        }
        if (!PROMOTIONS.contains(promotion)) {
            throw new IllegalArgumentException("unknown promotion rule '" + promotion + "' (choose " + PROMOTIONS + ")");
        }
        if (promoteAfter < 1) {
            throw new IllegalArgumentException("'promote-after' must be at least 1, got " + promoteAfter);
        }
        return this;
    }

    /** The promotion rule these settings name. */
    public PromotionRule promotionRule() {
        return switch (promotion.toLowerCase(Locale.ROOT)) {
            case "never" -> PromotionRule.never();
            case "one-level-up" -> PromotionRule.oneLevelUp();
            case "to-top-after" -> PromotionRule.toTopAfter(promoteAfter);
            default -> PromotionRule.toTop();
        };
    }

    /**
     * A store builder with this chain, binding each tier name to {@code tiersByName}; add a drop
     * listener and build.
     *
     * @throws IllegalArgumentException naming a tier the settings use but the map lacks
     */
    public TieredStore.Builder builder(Map<String, ? extends Tier> tiersByName) {
        conclude();
        TieredStore.Builder b = TieredStore.builder().promotion(promotionRule());
        for (TierSettings t : tiers) {
            Tier tier = tiersByName.get(t.name());
            if (tier == null) {
                throw new IllegalArgumentException("store settings name tier '" + t.name() + "', which is not open (open tiers: "
                        + tiersByName.keySet() + ")");
            }
            b.tier(tier, t.highWatermark(), t.lowWatermark(), t.policy());
        }
        return b;
    }
}
