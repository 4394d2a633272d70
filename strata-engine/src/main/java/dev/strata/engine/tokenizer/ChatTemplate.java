package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.expression.ExpressionStrategy;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.mode.ExecutionMode;
import com.hubspot.jinjava.tree.output.RenderedOutputNode;
import com.hubspot.jinjava.tree.parse.ExpressionToken;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;

/**
 * A model's own Jinja {@code chat_template} (from {@code tokenizer_config.json}), rendered the way
 * Hugging Face {@code apply_chat_template} renders it.
 *
 * <p>Design note. The engine is Jinjava with its legacy overrides for Python behaviour on (strict
 * {@code {{-}/{@code -}}} whitespace control, natural operator precedence, iteration over dict
 * keys, evaluated map-literal keys). The variables are those transformers passes:
 * {@code messages} (role, content, and where present {@code tool_calls} with
 * {@code function.name}/{@code function.arguments} and {@code tool_call_id}), {@code tools} (the
 * JSON-schema function list, or null), {@code documents} (null),
 * {@code add_generation_prompt}, {@code bos_token}, {@code eos_token} and any extra template
 * keyword arguments (for example Qwen3's {@code enable_thinking}). Where Jinjava differs from
 * Python Jinja, small adapters close the gap:
 * <ul>
 *   <li>{@code trim_blocks} and {@code lstrip_blocks} applied to the source the way Python applies
 *       them (Jinjava's own options also strip before a tag that follows text on its line);</li>
 *   <li>expressions print as Python's {@code str}: {@code True}/{@code False}, float digits as
 *       {@code repr};</li>
 *   <li>{@code x is iterable} true for strings, as in Python;</li>
 *   <li>{@code not x is test} read as {@code not (x is test)}, and {@code namespace(a=expr)}
 *       keyword values bound as a whole, as Python's precedence says;</li>
 *   <li>{@code raise_exception(msg)} and {@code strftime_now(fmt)} as in transformers, and Jinja's
 *       {@code items} filter;</li>
 *   <li>{@code tojson} as Python's {@code json.dumps(x, ensure_ascii=False)}: {@code ", "} and
 *       {@code ": "} separators, {@code indent=n} pretty printing ({@link PyJson});</li>
 *   <li>Python string methods ({@code strip}, {@code lstrip}, {@code rstrip} with or without
 *       characters, {@code split}, {@code startswith}, {@code endswith}, ...) and dict
 *       {@code get(key, default)} through an EL resolver ({@link PyMethods});</li>
 *   <li>two syntax forms Jinjava's parser lacks, rewritten before parsing: reversed slices
 *       {@code x[::-1]} become {@code (x|reverse|list)}, and loop filters
 *       {@code {% for a in xs if cond %}} become a filter that selects the items first, so
 *       {@code loop.last} and {@code loop.index} count the selected items as in Python.</li>
 * </ul>
 *
 * <p>Known differences left (no template Strata ships uses them): {@code loop.previtem} and
 * {@code loop.nextitem}, {@code %} string formatting and string repetition ({@code '-' * 3}) are
 * not supported, and {@code {{ none }}} prints nothing where Python prints {@code None} (Jinjava
 * cannot tell a null value from an undefined one, which prints nothing in both).
 *
 * <p>Errors: a template that does not parse, a {@code raise_exception} call and an error while
 * rendering all throw {@link ChatTemplateException} (an {@link IllegalArgumentException}) whose
 * message names the problem; the server answers it with a 400.
 *
 * <p>Immutable; any thread may render concurrently (each render has its own interpreter).
 */
public final class ChatTemplate {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Jinjava JINJAVA = createEngine();
    /** {@code ident.path[::-1]}: Jinjava's parser has no slice step. */
    private static final Pattern REVERSED_SLICE = Pattern.compile("([A-Za-z_][A-Za-z0-9_.]*)\\[::-1]");
    /** {@code {% for targets in iterable if condition %}} (with optional whitespace control). */
    private static final Pattern FILTERED_FOR = Pattern.compile(
            "(\\{%-?\\s*for\\s+)([A-Za-z_][A-Za-z0-9_]*(?:\\s*,\\s*[A-Za-z_][A-Za-z0-9_]*)*)(\\s+in\\s+)((?:(?!%}).)+?)\\s+if\\s+((?:(?!%}).)+?)(\\s*-?%})");
    /** {@code not x is test}: Python binds {@code is} tighter than {@code not}, Jinjava the other way round. */
    private static final Pattern NOT_IS = Pattern.compile(
            "\\bnot\\s+([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*|\\[[^\\]]*])*)\\s+is\\s+(not\\s+)?([A-Za-z_]+)\\b");

    /** {@code name=value} in a call's argument list. */
    private static final Pattern NAMED_ARGUMENT = Pattern.compile("^(\\s*[A-Za-z_][A-Za-z0-9_]*\\s*=)(?!=)(.*)$", Pattern.DOTALL);

    private final String source; // the template text as the checkpoint gives it
    private final String prepared; // the text after the syntax adapters

    private ChatTemplate(String source, String prepared) {
        this.source = source;
        this.prepared = prepared;
    }

    /**
     * Parses {@code source}; throws {@link ChatTemplateException} naming the first syntax error.
     */
    public static ChatTemplate of(String source) {
        Objects.requireNonNull(source, "source");
        String prepared = prepare(source);
        JinjavaInterpreter interpreter = JINJAVA.newInterpreter();
        interpreter.parse(prepared);
        for (TemplateError e : interpreter.getErrorsCopy()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw new ChatTemplateException("chat template does not parse: " + describe(e));
            }
        }
        return new ChatTemplate(source, prepared);
    }

    /** The template text as given. */
    public String source() {
        return source;
    }

    /**
     * Renders {@code messages} with the template.
     *
     * @param messages            the conversation
     * @param tools               the function list (OpenAI {@code tools} array elements, each
     *                            {@code {"type": "function", "function": {...}}}), or null/empty for none
     * @param addGenerationPrompt end where the assistant's reply begins
     * @param bosToken            the model's bos token string (may be null)
     * @param eosToken            the model's eos token string (may be null)
     * @param kwargs              extra template variables (for example {@code enable_thinking}); JSON
     *                            values, Java maps, lists, strings, numbers and booleans are accepted;
     *                            the variables above take precedence over keys of the same name
     * @throws ChatTemplateException when the template raises an exception or fails to render
     */
    public String render(List<ChatMessage> messages, List<JsonNode> tools, boolean addGenerationPrompt,
                         String bosToken, String eosToken, Map<String, ?> kwargs) {
        Map<String, Object> vars = new LinkedHashMap<>();
        if (kwargs != null) {
            kwargs.forEach((k, v) -> vars.put(k, toTemplateValue(v)));
        }
        List<Object> msgs = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            msgs.add(m.toTemplateValue());
        }
        vars.put("messages", msgs);
        List<Object> toolList = null;
        if (tools != null && !tools.isEmpty()) {
            toolList = new ArrayList<>(tools.size());
            for (JsonNode t : tools) {
                toolList.add(toTemplateValue(t));
            }
        }
        vars.put("tools", toolList);
        vars.put("documents", null);
        vars.put("add_generation_prompt", addGenerationPrompt);
        if (bosToken != null) { // transformers passes only the special tokens a tokenizer has
            vars.put("bos_token", bosToken);
        }
        if (eosToken != null) {
            vars.put("eos_token", eosToken);
        }
        RenderResult r = JINJAVA.renderForResult(prepared, vars);
        for (TemplateError e : r.getErrors()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                String raised = raisedMessage(e);
                throw new ChatTemplateException(raised != null ? "chat template: " + raised
                        : "chat template failed to render: " + describe(e));
            }
        }
        return r.getOutput();
    }

    /** Converts a JSON tree or Java value into the maps, lists and scalars the template reads. */
    static Object toTemplateValue(Object v) {
        if (v instanceof JsonNode n) {
            return n.isNull() || n.isMissingNode() ? null : JSON.convertValue(n, Object.class);
        }
        return v;
    }

    /**
     * {@code src} with {@code rewrite} applied to the inside of every {@code {{ }}} and
     * {@code {% %}} tag (template text and comments stay as they are).
     */
    private static String insideTags(String src, java.util.function.UnaryOperator<String> rewrite) {
        StringBuilder out = new StringBuilder(src.length());
        int i = 0;
        while (i < src.length()) {
            int expr = src.indexOf("{{", i);
            int block = src.indexOf("{%", i);
            int comment = src.indexOf("{#", i);
            int start = min(expr, min(block, comment));
            if (start < 0) {
                break;
            }
            out.append(src, i, start);
            if (start == comment) {
                int end = src.indexOf("#}", start + 2);
                int stop = end < 0 ? src.length() : end + 2;
                out.append(src, start, stop);
                i = stop;
                continue;
            }
            int end = tagEnd(src, start + 2, start == expr ? '}' : '%');
            if (end < 0) { // unterminated: the parser reports it
                out.append(src, start, src.length());
                return out.toString();
            }
            out.append(src, start, start + 2).append(rewrite.apply(src.substring(start + 2, end))).append(src, end, end + 2);
            i = end + 2;
        }
        out.append(src, i, src.length());
        return out.toString();
    }

    /** The smaller of two indexes where -1 means none. */
    private static int min(int a, int b) {
        return a < 0 ? b : b < 0 ? a : Math.min(a, b);
    }

    private static String prepare(String source) {
        String s = insideTags(trimAndLstripBlocks(source), tag -> {
            String t = REVERSED_SLICE.matcher(tag).replaceAll("($1|reverse|list)");
            t = NOT_IS.matcher(t).replaceAll("not ($1 is $2$3)");
            return parenthesizeNamedArguments(t, "namespace(");
        });
        Matcher m = FILTERED_FOR.matcher(s);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String targets = m.group(2).replaceAll("\\s+", "");
            String replacement = m.group(1) + m.group(2) + m.group(3) + "(" + m.group(4) + ")|strata_loop_select("
                    + pyQuote(targets) + ", " + pyQuote(m.group(5)) + ")" + m.group(6);
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }

    /**
     * Wraps each keyword argument value of every {@code call(} in parentheses: Jinjava binds
     * {@code name=a - 1} as {@code (name=a) - 1}, Python as {@code name=(a - 1)}.
     */
    private static String parenthesizeNamedArguments(String s, String call) {
        StringBuilder out = new StringBuilder();
        int from = 0;
        for (int at = s.indexOf(call); at >= 0; at = s.indexOf(call, from)) {
            int open = at + call.length();
            out.append(s, from, open);
            int depth = 0;
            int argStart = open;
            int i = open;
            char quote = 0;
            List<String> args = new ArrayList<>();
            for (; i < s.length(); i++) {
                char c = s.charAt(i);
                if (quote != 0) {
                    if (c == '\\') {
                        i++;
                    } else if (c == quote) {
                        quote = 0;
                    }
                } else if (c == '\'' || c == '"') {
                    quote = c;
                } else if (c == '(' || c == '[' || c == '{') {
                    depth++;
                } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
                    depth--;
                } else if (c == ')' || (c == ',' && depth == 0)) {
                    args.add(s.substring(argStart, i));
                    argStart = i + 1;
                    if (c == ')') {
                        break;
                    }
                }
            }
            if (i >= s.length()) { // unbalanced: leave the rest for the parser to report
                out.append(s, open, s.length());
                return out.toString();
            }
            for (int k = 0; k < args.size(); k++) {
                Matcher named = NAMED_ARGUMENT.matcher(args.get(k));
                out.append(k == 0 ? "" : ",").append(named.matches() ? named.group(1) + "(" + named.group(2) + ")" : args.get(k));
            }
            out.append(')');
            from = i + 1;
        }
        out.append(s.substring(from));
        return out.toString();
    }

    /**
     * Python Jinja's {@code trim_blocks} and {@code lstrip_blocks}, applied to the source: the
     * first newline after a block or comment tag goes, and spaces and tabs between a line's start
     * and a block or comment tag go ({@code {%+} keeps them). Jinjava's own options strip before a
     * tag that follows text on the same line too, which Python does not.
     */
    private static String trimAndLstripBlocks(String src) {
        StringBuilder out = new StringBuilder(src.length());
        int i = 0;
        while (i < src.length()) {
            boolean blockStart = src.startsWith("{%", i) || src.startsWith("{#", i);
            if (blockStart) {
                boolean comment = src.charAt(i + 1) == '#';
                if (!(i + 2 < src.length() && src.charAt(i + 2) == '+')) {
                    int j = i; // the line start is the source's: a newline trim_blocks removed still ends a line
                    while (j > 0 && (src.charAt(j - 1) == ' ' || src.charAt(j - 1) == '\t')) {
                        j--;
                    }
                    if (j == 0 || src.charAt(j - 1) == '\n') {
                        out.setLength(out.length() - (i - j)); // those characters were copied last
                    }
                }
                int end = comment ? src.indexOf("#}", i + 2) : tagEnd(src, i + 2);
                if (end < 0) { // unterminated: the parser reports it
                    out.append(src, i, src.length());
                    break;
                }
                String tag = src.substring(i, end + 2);
                out.append(tag);
                i = end + 2;
                if (src.charAt(end - 1) != '+') {
                    if (src.startsWith("\r\n", i)) {
                        i += 2;
                    } else if (i < src.length() && src.charAt(i) == '\n') {
                        i++;
                    }
                }
                if (!comment && isRawTag(tag)) { // a raw block's body is text: copy it as it is
                    int raw = src.indexOf("endraw", i);
                    if (raw > 0) {
                        int rawStart = src.lastIndexOf("{%", raw);
                        out.append(src, i, rawStart);
                        i = rawStart;
                    }
                }
                continue;
            }
            out.append(src.charAt(i++));
        }
        return out.toString();
    }

    /** The index of the {@code %}} closing the block tag whose body starts at {@code from}, skipping string literals. */
    private static int tagEnd(String src, int from) {
        return tagEnd(src, from, '%');
    }

    /** The index of the {@code close}{@code }} ending the tag whose body starts at {@code from}, skipping string literals. */
    private static int tagEnd(String src, int from, char close) {
        char quote = 0;
        for (int i = from; i + 1 < src.length(); i++) {
            char c = src.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (c == close && src.charAt(i + 1) == '}') {
                return i;
            }
        }
        return -1;
    }

    private static boolean isRawTag(String tag) {
        return tag.matches("(?s)\\{%[-+]?\\s*raw\\s*[-+]?%}");
    }

    private static String pyQuote(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    /** The message of the {@code raise_exception} call behind {@code e}, or null when it came from elsewhere. */
    private static String raisedMessage(TemplateError e) {
        for (Throwable t = e.getException(); t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RaisedException r) {
                return r.getMessage();
            }
        }
        return null;
    }

    private static String describe(TemplateError e) {
        return e.getMessage() + (e.getLineno() > 0 ? " (line " + e.getLineno() + ")" : "")
                + (e.getFieldName() == null || e.getFieldName().isEmpty() ? "" : " in '" + e.getFieldName() + "'");
    }

    private static Jinjava createEngine() {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PyMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withExecutionMode(new PythonOutputMode())
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withParseWhitespaceControlStrictly(true)
                        .withUseTrimmingForNotesAndExpressions(true)
                        .withUseNaturalOperatorPrecedence(true)
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withUsePyishObjectMapper(true)
                        .withKeepNullableLoopValues(true)
                        .build())
                .withElResolver(resolver)
                .withFailOnUnknownTokens(false)
                .build();
        Jinjava j = new Jinjava(config);
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception", ChatTemplate.class,
                "raiseException", Object.class));
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "strftime_now", ChatTemplate.class,
                "strftimeNow", String.class));
        j.getGlobalContext().registerFilter(new ToJsonFilter());
        j.getGlobalContext().registerFilter(new LoopSelectFilter());
        j.getGlobalContext().registerExpTest(new IterableTest());
        j.getGlobalContext().registerFilter(new ItemsFilter());
        return j;
    }

    /** {@code raise_exception(message)}: stops rendering with the template's own message. */
    public static Object raiseException(Object message) {
        throw new RaisedException(String.valueOf(message));
    }

    /** {@code strftime_now(format)}: today's date in the common {@code %d %b %Y}-style formats. */
    public static String strftimeNow(String format) {
        LocalDate today = LocalDate.now();
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                s.append(c);
                continue;
            }
            char f = format.charAt(++i);
            s.append(switch (f) {
                case 'd' -> String.format(Locale.ROOT, "%02d", today.getDayOfMonth());
                case 'm' -> String.format(Locale.ROOT, "%02d", today.getMonthValue());
                case 'Y' -> Integer.toString(today.getYear());
                case 'y' -> String.format(Locale.ROOT, "%02d", today.getYear() % 100);
                case 'b' -> today.format(DateTimeFormatter.ofPattern("MMM", Locale.ENGLISH));
                case 'B' -> today.format(DateTimeFormatter.ofPattern("MMMM", Locale.ENGLISH));
                case 'a' -> today.format(DateTimeFormatter.ofPattern("EEE", Locale.ENGLISH));
                case 'A' -> today.format(DateTimeFormatter.ofPattern("EEEE", Locale.ENGLISH));
                case 'j' -> String.format(Locale.ROOT, "%03d", today.getDayOfYear());
                case '%' -> "%";
                default -> throw new RaisedException("strftime_now: unsupported format directive %" + f + " in '" + format + "'");
            });
        }
        return s.toString();
    }

    /** Runs every render with {@link PythonOutput} as the way expressions print. */
    private static final class PythonOutputMode implements ExecutionMode {
        @Override
        public void prepareContext(Context context) {
            context.setExpressionStrategy(new PythonOutput());
        }
    }

    /**
     * Prints {@code {{ x }}} as Python's {@code str(x)} where Jinjava differs: {@code True} and
     * {@code False} for booleans, {@code repr} digits for floats; null and undefined print nothing.
     */
    private static final class PythonOutput implements ExpressionStrategy {
        @Override
        public RenderedOutputNode interpretOutput(ExpressionToken token, JinjavaInterpreter interpreter) {
            Object v = interpreter.resolveELExpression(token.getExpr(), token.getLineNumber());
            String s;
            if (v == null) {
                s = "";
            } else if (v instanceof Boolean b) {
                s = b ? "True" : "False";
            } else if (v instanceof Double || v instanceof Float) {
                s = PyJson.pyFloat(((Number) v).doubleValue());
            } else {
                s = interpreter.getAsString(v);
            }
            return new RenderedOutputNode(s);
        }
    }

    /** What {@code raise_exception} throws: the template's own message. */
    static final class RaisedException extends RuntimeException {
        RaisedException(String message) {
            super(message);
        }
    }

    /**
     * {@code x is iterable} as in Python, where strings are iterable too (Jinjava's own test says
     * no for strings; Llama 3's template relies on it to print a tool result as JSON).
     */
    private static final class IterableTest implements ExpTest {
        @Override
        public String getName() {
            return "iterable";
        }

        @Override
        public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
            return var instanceof CharSequence || var instanceof Iterable<?> || var instanceof Map<?, ?>
                    || (var != null && var.getClass().isArray());
        }
    }

    /** {@code tojson} with Python {@code json.dumps(x, ensure_ascii=False, indent=...)} output. */
    private static final class ToJsonFilter implements Filter {
        @Override
        public String getName() {
            return "tojson";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return PyJson.dumps(var, null);
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = kwargs.get("indent");
            if (indent == null && args.length > 0) {
                indent = args[0];
            }
            return PyJson.dumps(var, indent == null ? null : ((Number) indent).intValue());
        }
    }

    /** {@code d|items}: the dict's key/value pairs, as Jinja's {@code items} filter. */
    private static final class ItemsFilter implements Filter {
        @Override
        public String getName() {
            return "items";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            if (var == null) {
                return List.of();
            }
            if (!(var instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("items: expected a mapping, got " + var.getClass().getSimpleName());
            }
            List<Object> pairs = new ArrayList<>(map.size());
            for (Map.Entry<?, ?> e : map.entrySet()) {
                pairs.add(List.of(e.getKey(), e.getValue()));
            }
            return pairs;
        }
    }

    /**
     * {@code xs|strata_loop_select('a,b', 'cond')}: the items of {@code xs} for which {@code cond}
     * holds with the item bound to the loop targets (several targets unpack a pair or a list).
     */
    private static final class LoopSelectFilter implements Filter {
        @Override
        public String getName() {
            return "strata_loop_select";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            String[] targets = args[0].split(",");
            String condition = args[1];
            List<Object> kept = new ArrayList<>();
            Iterable<?> items = var instanceof Map<?, ?> map ? map.keySet() : var instanceof Iterable<?> it ? it : List.of();
            for (Object item : items) {
                try (JinjavaInterpreter.InterpreterScopeClosable ignored = interpreter.enterScope()) {
                    bind(interpreter, targets, item);
                    Object ok = interpreter.resolveELExpression(condition, interpreter.getLineNumber());
                    if (PyMethods.truthy(ok)) {
                        kept.add(item);
                    }
                }
            }
            return kept;
        }

        private static void bind(JinjavaInterpreter interpreter, String[] targets, Object item) {
            if (targets.length == 1) {
                interpreter.getContext().put(targets[0], item);
                return;
            }
            List<Object> parts = new ArrayList<>();
            if (item instanceof Map.Entry<?, ?> e) {
                parts.add(e.getKey());
                parts.add(e.getValue());
            } else if (item instanceof List<?> l) {
                parts.addAll(l);
            }
            for (int i = 0; i < targets.length; i++) {
                interpreter.getContext().put(targets[i], i < parts.size() ? parts.get(i) : null);
            }
        }
    }
}
