package dev.strata.engine.constrain;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.constrain.GrammarNode.AnyObjectNode;
import dev.strata.engine.constrain.GrammarNode.ArrayNode;
import dev.strata.engine.constrain.GrammarNode.LiteralsNode;
import dev.strata.engine.constrain.GrammarNode.NumberNode;
import dev.strata.engine.constrain.GrammarNode.ObjectNode;
import dev.strata.engine.constrain.GrammarNode.Ref;
import dev.strata.engine.constrain.GrammarNode.SequenceNode;
import dev.strata.engine.constrain.GrammarNode.StringNode;
import dev.strata.engine.constrain.GrammarNode.UnionNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a constrained output may be, compiled into a graph of {@link GrammarNode}s: any JSON object
 * ({@code response_format: json_object}), a value of a JSON Schema ({@code json_schema}), or a tool
 * call in the model's call format whose arguments follow the function's parameter schema
 * ({@code tool_choice: required} or a named function).
 *
 * <p>Design note. Output is compact JSON (no whitespace), object keys in the schema's declaration
 * order, optional properties possibly left out; every value the grammar admits validates against
 * the schema. The schema keywords understood are {@code type} (one or a list), {@code properties},
 * {@code required}, {@code additionalProperties} (false, true, or a schema next to declared
 * properties: nothing beyond them is written), {@code items}, {@code minItems}, {@code maxItems},
 * {@code minLength}, {@code maxLength} (code points), {@code enum}, {@code const}, {@code anyOf}
 * and {@code oneOf} (alternatives told apart by their first byte: a string, a number, an object,
 * an array, a literal), {@code $ref} to {@code #}, {@code #/$defs/...} or {@code #/definitions/...}
 * (recursion allowed), and the annotations {@code title}, {@code description}, {@code default},
 * {@code examples}, {@code $schema}, {@code $id}, {@code $comment}, {@code deprecated},
 * {@code readOnly}, {@code writeOnly}, {@code strict}. Any other keyword ({@code pattern},
 * {@code format}, {@code minimum}, ...) is refused with a {@link SchemaException} naming it and
 * where it is, rather than producing output the schema would reject. A grammar also caches the
 * vocabulary masks its decoders compute ({@link #masks}), so requests with the same schema share them.
 *
 * <p>Immutable after construction except the mask caches; any thread.
 */
public final class SchemaGrammar {
    /** Any string. */
    static final StringNode ANY_STRING = new StringNode(0, -1);
    /** Any JSON value. */
    static final UnionNode ANY_VALUE;

    static {
        ANY_VALUE = new UnionNode(Arrays.asList(new AnyObjectNode(), ANY_STRING, new NumberNode(false),
                LiteralsNode.of("true", "false", "null"), null));
        ANY_VALUE.alternatives[4] = new ArrayNode(ANY_VALUE, 0, -1); // the union contains arrays of itself
        settle(ANY_VALUE);
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "$schema", "$id",
            "$comment", "deprecated", "readOnly", "writeOnly", "strict");
    private static final Set<String> KEYWORDS = Set.of("type", "properties", "required", "additionalProperties", "items",
            "minItems", "maxItems", "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions");

    private final GrammarNode root;
    private final String description; // for messages and logs
    private final Map<Object, MaskCache> masks = new ConcurrentHashMap<>();

    private SchemaGrammar(GrammarNode root, String description) {
        this.root = root;
        this.description = description;
        settle(root);
        if (root.minLength >= GrammarNode.FAR) {
            throw new SchemaException("$", "no finite value satisfies the schema");
        }
    }

    /** Any JSON object. */
    public static SchemaGrammar anyObject() {
        return new SchemaGrammar(new AnyObjectNode(), "a JSON object");
    }

    /** A value of {@code schema} (a JSON Schema object). */
    public static SchemaGrammar of(JsonNode schema) {
        return new SchemaGrammar(new Compiler(schema).compile(), "a value of the JSON schema");
    }

    /** How a model writes a tool call. */
    public enum CallForm {
        /** {@code <tool_call>\n{"name":...,"arguments":{...}}\n</tool_call>}. */
        HERMES,
        /** {@code [TOOL_CALLS][{"name":...,"arguments":{...}}]}. */
        MISTRAL
    }

    /**
     * One call of one of {@code functions} (name to parameters schema, in order), in {@code form}:
     * the name is one of theirs and the arguments a value of that function's schema (an object).
     */
    public static SchemaGrammar toolCall(Map<String, JsonNode> functions, CallForm form) {
        if (functions.isEmpty()) {
            throw new SchemaException("tools", "a tool call needs at least one function");
        }
        List<byte[]> heads = new ArrayList<>();
        List<GrammarNode> arguments = new ArrayList<>();
        for (Map.Entry<String, JsonNode> f : functions.entrySet()) {
            heads.add(("{\"name\":" + quote(f.getKey()) + ",\"arguments\":").getBytes(StandardCharsets.UTF_8));
            JsonNode params = f.getValue();
            GrammarNode args = params == null || params.isNull() || params.isEmpty()
                    ? new AnyObjectNode()
                    : new Compiler(params, "tools[" + f.getKey() + "].parameters").compile();
            arguments.add(args);
        }
        LiteralsNode call = new LiteralsNode(heads, arguments);
        List<GrammarNode> parts = switch (form) {
            case HERMES -> List.of(LiteralsNode.of("<tool_call>\n"), call, LiteralsNode.of("}\n</tool_call>"));
            case MISTRAL -> List.of(LiteralsNode.of("[TOOL_CALLS]["), call, LiteralsNode.of("}]"));
        };
        return new SchemaGrammar(new SequenceNode(parts), "a call of " + String.join(", ", functions.keySet()));
    }

    /** The state before the first byte. */
    GrammarFrame start() {
        return GrammarFrame.start(root);
    }

    /** The fewest bytes of any output this grammar admits. */
    public int minLength() {
        return root.minLength;
    }

    /** Whether the whole of {@code text} is an output this grammar admits. */
    public boolean admits(String text) {
        GrammarFrame f = GrammarFrame.step(start(), text.getBytes(StandardCharsets.UTF_8));
        return f != null && GrammarFrame.accepting(f);
    }

    /** The mask cache of this grammar for one vocabulary (created on first use). */
    MaskCache masks(TokenVocabulary vocabulary) {
        return masks.computeIfAbsent(vocabulary, v -> new MaskCache());
    }

    @Override
    public String toString() {
        return "SchemaGrammar[" + description + "]";
    }

    static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Computes every reachable node's first bytes and minimum length (a fixpoint over the graph). */
    private static void settle(GrammarNode root) {
        List<GrammarNode> all = reachable(root);
        boolean changed = true;
        while (changed) {
            changed = false;
            for (GrammarNode n : all) {
                int len = Math.min(GrammarNode.FAR, n.computeMinLength());
                if (len < n.minLength) {
                    n.minLength = len;
                    changed = true;
                }
                long[] f = n.first.clone();
                n.computeFirst(f);
                if (!Arrays.equals(f, n.first)) {
                    System.arraycopy(f, 0, n.first, 0, 4);
                    changed = true;
                }
            }
        }
        for (GrammarNode n : all) {
            n.settled = true;
        }
    }

    private static List<GrammarNode> reachable(GrammarNode root) {
        Map<GrammarNode, Boolean> seen = new IdentityHashMap<>();
        ArrayDeque<GrammarNode> todo = new ArrayDeque<>();
        todo.add(root);
        List<GrammarNode> out = new ArrayList<>();
        while (!todo.isEmpty()) {
            GrammarNode n = todo.poll();
            if (n.settled || seen.put(n, Boolean.TRUE) != null) {
                continue; // a settled node (the shared ones) is a constant here
            }
            out.add(n);
            switch (n) {
                case ObjectNode o -> todo.addAll(Arrays.asList(o.values));
                case ArrayNode a -> todo.add(a.items);
                case LiteralsNode l -> {
                    if (l.continuations != null) {
                        for (GrammarNode c : l.continuations) {
                            if (c != null) {
                                todo.add(c);
                            }
                        }
                    }
                }
                case UnionNode u -> todo.addAll(Arrays.asList(u.alternatives));
                case SequenceNode q -> todo.addAll(Arrays.asList(q.parts));
                case Ref r -> todo.add(r.target);
                case AnyObjectNode a -> {
                    todo.add(ANY_VALUE);
                    todo.add(ANY_STRING);
                }
                case StringNode s -> {
                }
                case NumberNode x -> {
                }
            }
        }
        return out;
    }

    /** Translates one schema into nodes; {@code $ref}s are resolved at the end, so recursion is allowed. */
    private static final class Compiler {
        private final JsonNode rootSchema;
        private final String rootPath;
        private final Map<String, Ref> refs = new HashMap<>();
        private final List<UnionNode> unions = new ArrayList<>();
        private final List<String> unionPaths = new ArrayList<>();

        Compiler(JsonNode schema) {
            this(schema, "$");
        }

        Compiler(JsonNode schema, String rootPath) {
            if (schema == null || !schema.isObject()) {
                throw new SchemaException(rootPath, "a schema must be a JSON object, got " + abbreviate(schema));
            }
            this.rootSchema = schema;
            this.rootPath = rootPath;
        }

        GrammarNode compile() {
            GrammarNode root = node(rootSchema, rootPath);
            while (true) {
                List<Ref> open = refs.values().stream().filter(r -> r.target == null).toList();
                if (open.isEmpty()) {
                    break;
                }
                for (Ref r : open) {
                    JsonNode target = resolve(r.pointer);
                    r.target = node(target, r.pointer);
                }
            }
            for (Ref r : refs.values()) {
                if (r.target instanceof Ref) {
                    Ref chain = r;
                    Set<Ref> seen = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
                    while (chain.target instanceof Ref next) {
                        if (!seen.add(chain)) {
                            throw new SchemaException(r.pointer, "$ref refers only to itself");
                        }
                        chain = next;
                    }
                }
            }
            settle(root);
            checkUnions();
            return root;
        }

        private JsonNode resolve(String pointer) {
            if (pointer.equals("#")) {
                return rootSchema;
            }
            JsonNode n = rootSchema.at(pointer.substring(1));
            if (n.isMissingNode() || !n.isObject()) {
                throw new SchemaException(pointer, "$ref '" + pointer + "' does not name a schema in this document");
            }
            return n;
        }

        private GrammarNode node(JsonNode s, String path) {
            if (s.isBoolean()) {
                if (s.asBoolean()) {
                    return ANY_VALUE;
                }
                throw new SchemaException(path, "the schema 'false' admits no value");
            }
            if (!s.isObject()) {
                throw new SchemaException(path, "a schema must be a JSON object or a boolean, got " + abbreviate(s));
            }
            for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                if (!KEYWORDS.contains(k) && !ANNOTATIONS.contains(k)) {
                    throw new SchemaException(path, "the keyword '" + k + "' is not supported by constrained decoding"
                            + " (supported: " + String.join(", ", KEYWORDS.stream().sorted().toList()) + ")");
                }
            }
            if (s.has("$ref")) {
                String p = text(s.get("$ref"), path + ".$ref");
                if (!(p.equals("#") || p.startsWith("#/$defs/") || p.startsWith("#/definitions/"))) {
                    throw new SchemaException(path + ".$ref", "only references into this schema are supported"
                            + " ('#', '#/$defs/NAME', '#/definitions/NAME'), got '" + p + "'");
                }
                return refs.computeIfAbsent(p, Ref::new);
            }
            if (s.has("const")) {
                return new LiteralsNode(List.of(literal(s.get("const"))), null);
            }
            if (s.has("enum")) {
                JsonNode e = s.get("enum");
                if (!e.isArray() || e.isEmpty()) {
                    throw new SchemaException(path + ".enum", "'enum' must be a non-empty array, got " + abbreviate(e));
                }
                LinkedHashMap<String, byte[]> values = new LinkedHashMap<>();
                for (JsonNode v : e) {
                    byte[] l = literal(v);
                    values.putIfAbsent(new String(l, StandardCharsets.UTF_8), l);
                }
                return new LiteralsNode(new ArrayList<>(values.values()), null);
            }
            for (String k : new String[] {"anyOf", "oneOf"}) {
                if (s.has(k)) {
                    JsonNode alts = s.get(k);
                    if (!alts.isArray() || alts.isEmpty()) {
                        throw new SchemaException(path + "." + k, "'" + k + "' must be a non-empty array");
                    }
                    List<GrammarNode> nodes = new ArrayList<>();
                    for (int i = 0; i < alts.size(); i++) {
                        nodes.add(node(alts.get(i), path + "." + k + "[" + i + "]"));
                    }
                    return union(nodes, path + "." + k);
                }
            }
            JsonNode type = s.get("type");
            if (type == null) {
                if (s.has("properties") || s.has("required") || s.has("additionalProperties")) {
                    return object(s, path);
                }
                if (s.has("items") || s.has("minItems") || s.has("maxItems")) {
                    return array(s, path);
                }
                if (s.has("minLength") || s.has("maxLength")) {
                    return string(s, path);
                }
                return ANY_VALUE;
            }
            if (type.isArray()) {
                List<GrammarNode> nodes = new ArrayList<>();
                for (JsonNode t : type) {
                    nodes.add(typed(text(t, path + ".type"), s, path));
                }
                if (nodes.isEmpty()) {
                    throw new SchemaException(path + ".type", "'type' must name at least one type");
                }
                return nodes.size() == 1 ? nodes.getFirst() : union(nodes, path + ".type");
            }
            return typed(text(type, path + ".type"), s, path);
        }

        private GrammarNode typed(String type, JsonNode s, String path) {
            return switch (type) {
                case "object" -> object(s, path);
                case "array" -> array(s, path);
                case "string" -> string(s, path);
                case "number" -> new NumberNode(false);
                case "integer" -> new NumberNode(true);
                case "boolean" -> LiteralsNode.of("true", "false");
                case "null" -> LiteralsNode.of("null");
                default -> throw new SchemaException(path + ".type", "unknown type '" + type
                        + "' (one of object, array, string, number, integer, boolean, null)");
            };
        }

        private GrammarNode object(JsonNode s, String path) {
            JsonNode props = s.get("properties");
            JsonNode additional = s.get("additionalProperties");
            List<String> required = new ArrayList<>();
            if (s.has("required")) {
                JsonNode r = s.get("required");
                if (!r.isArray()) {
                    throw new SchemaException(path + ".required", "'required' must be an array of names, got " + abbreviate(r));
                }
                for (JsonNode n : r) {
                    required.add(text(n, path + ".required"));
                }
            }
            if (props == null || props.isEmpty()) {
                if (!required.isEmpty()) {
                    throw new SchemaException(path + ".required", "'" + required.getFirst() + "' is required but not among the properties");
                }
                boolean closed = additional != null && additional.isBoolean() && !additional.asBoolean();
                if (additional != null && additional.isObject() && !additional.isEmpty()) {
                    throw new SchemaException(path + ".additionalProperties",
                            "an object whose properties are all given by 'additionalProperties' is not supported; declare its properties");
                }
                return closed ? new ObjectNode(List.of(), List.of(), List.of()) : new AnyObjectNode();
            }
            if (!props.isObject()) {
                throw new SchemaException(path + ".properties", "'properties' must be an object, got " + abbreviate(props));
            }
            List<String> names = new ArrayList<>();
            List<GrammarNode> values = new ArrayList<>();
            List<Boolean> req = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                names.add(e.getKey());
                values.add(node(e.getValue(), path + ".properties." + e.getKey()));
                req.add(required.contains(e.getKey()));
            }
            for (String r : required) {
                if (!names.contains(r)) {
                    throw new SchemaException(path + ".required", "'" + r + "' is required but not among the properties");
                }
            }
            return new ObjectNode(names, values, req);
        }

        private GrammarNode array(JsonNode s, String path) {
            int[] bounds = bounds(s, "minItems", "maxItems", path);
            GrammarNode items = s.has("items") ? node(s.get("items"), path + ".items") : ANY_VALUE;
            return new ArrayNode(items, bounds[0], bounds[1]);
        }

        private GrammarNode string(JsonNode s, String path) {
            int[] bounds = bounds(s, "minLength", "maxLength", path);
            return bounds[0] == 0 && bounds[1] < 0 ? ANY_STRING : new StringNode(bounds[0], bounds[1]);
        }

        /** {@code [min, max]} of a pair of count keywords (min absent: 0; max absent: -1), max below min refused. */
        private static int[] bounds(JsonNode s, String minKey, String maxKey, String path) {
            int min = count(s, minKey, path, 0);
            int max = count(s, maxKey, path, -1);
            if (max >= 0 && max < min) {
                throw new SchemaException(path, maxKey + " " + max + " is below " + minKey + " " + min);
            }
            return new int[] {min, max};
        }

        private static int count(JsonNode s, String key, String path, int absent) {
            JsonNode v = s.get(key);
            if (v == null) {
                return absent;
            }
            if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < 0) {
                throw new SchemaException(path + "." + key, "'" + key + "' must be a non-negative integer, got " + abbreviate(v));
            }
            return v.asInt();
        }

        private GrammarNode union(List<GrammarNode> nodes, String path) {
            UnionNode u = new UnionNode(nodes);
            unions.add(u);
            unionPaths.add(path);
            return u;
        }

        /** After every reference is resolved and the graph settled: alternatives of a union must start differently. */
        private void checkUnions() {
            for (int k = 0; k < unions.size(); k++) {
                GrammarNode[] alts = unions.get(k).alternatives;
                for (int i = 0; i < alts.length; i++) {
                    for (int j = i + 1; j < alts.length; j++) {
                        for (int w = 0; w < 4; w++) {
                            if ((alts[i].first[w] & alts[j].first[w]) != 0) {
                                throw new SchemaException(unionPaths.get(k), "alternatives " + i + " and " + j
                                        + " may start alike (two objects, two arrays, two strings or two numbers); constrained"
                                        + " decoding needs alternatives told apart by their first character (use 'enum' for a"
                                        + " choice among values)");
                            }
                        }
                    }
                }
            }
        }

        private static byte[] literal(JsonNode v) {
            try {
                return JSON.writeValueAsString(v).getBytes(StandardCharsets.UTF_8);
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }

        private static String text(JsonNode v, String path) {
            if (v == null || !v.isTextual()) {
                throw new SchemaException(path, "expected a string, got " + abbreviate(v));
            }
            return v.asText();
        }
    }

    static String abbreviate(JsonNode v) {
        String s = String.valueOf(v);
        return s.length() > 80 ? s.substring(0, 77) + "..." : s;
    }
}
