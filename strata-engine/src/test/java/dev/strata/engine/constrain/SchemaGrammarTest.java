package dev.strata.engine.constrain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The grammar compiled from a schema admits exactly compact JSON that the schema validates: random
 * walks through the grammar (any byte it allows, finishing within a byte budget) always produce
 * text that a strict JSON parser reads and a JSON Schema validator accepts; hand-written wrong
 * texts are refused; schemas it cannot follow are refused with the keyword and place named.
 */
class SchemaGrammarTest {
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final SchemaRegistry VALIDATORS = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);

    static final String PERSON = """
            {"type":"object","properties":{
              "name":{"type":"string","minLength":1,"maxLength":12},
              "age":{"type":"integer"},
              "email":{"type":["string","null"]},
              "height":{"type":"number"},
              "tags":{"type":"array","items":{"type":"string","enum":["a","ab","b\\"q","ü"]},"minItems":1,"maxItems":3},
              "active":{"type":"boolean"},
              "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"const":"12345"}},
                         "required":["city"],"additionalProperties":false},
              "kind":{"enum":[1,12,"x",null,true]}
            },"required":["name","age","tags","kind"],"additionalProperties":false}""";

    static final String TREE = """
            {"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
              "value":{"type":"integer"},
              "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}
            },"required":["value","children"],"additionalProperties":false}}}""";

    static final String ANYTHING_NESTED = """
            {"type":"object","properties":{"meta":{},"list":{"type":"array"},"obj":{"type":"object"}},
             "required":["meta","list","obj"]}""";

    @ParameterizedTest
    @ValueSource(strings = {PERSON, TREE, ANYTHING_NESTED, "{\"type\":\"array\",\"items\":{\"type\":\"number\"}}",
            "{\"anyOf\":[{\"type\":\"string\",\"maxLength\":3},{\"type\":\"integer\"},{\"type\":\"null\"}]}"})
    void randomWalksThroughTheGrammarAlwaysGiveJsonTheSchemaValidates(String schemaText) throws Exception {
        JsonNode schema = JSON.readTree(schemaText);
        SchemaGrammar g = SchemaGrammar.of(schema);
        Schema validator = VALIDATORS.getSchema(schemaText);
        SplittableRandom random = new SplittableRandom(schemaText.hashCode());
        for (int round = 0; round < 300; round++) {
            int budget = g.minLength() + random.nextInt(120);
            byte[] out = walk(g, random, budget);
            assertThat(out.length).as("within the budget").isLessThanOrEqualTo(budget);
            String text = strictUtf8(out);
            JsonNode value = JSON.readTree(text);
            assertThat(validator.validate(value)).as("%s validates", text).isEmpty();
            assertThat(g.admits(text)).isTrue();
        }
    }

    /** A random output: any byte the grammar allows that leaves the output finishable in the budget. */
    static byte[] walk(SchemaGrammar g, SplittableRandom random, int budget) {
        GrammarFrame f = g.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (true) {
            if (GrammarFrame.accepting(f) && (random.nextInt(4) == 0 || f == GrammarFrame.Done.INSTANCE)) {
                return out.toByteArray();
            }
            List<Integer> allowed = new ArrayList<>();
            List<GrammarFrame> next = new ArrayList<>();
            for (int b = 0; b < 256; b++) {
                GrammarFrame a = GrammarFrame.step(f, b);
                if (a != null && out.size() + 1 + GrammarFrame.minRemaining(a) <= budget) {
                    allowed.add(b);
                    next.add(a);
                }
            }
            if (allowed.isEmpty()) {
                assertThat(GrammarFrame.accepting(f)).as("stuck before the output is complete: %s", out).isTrue();
                return out.toByteArray();
            }
            // prefer structure over long strings so that walks reach deep into the schema
            int pick = random.nextInt(allowed.size());
            for (int i = 0; i < allowed.size(); i++) {
                int b = allowed.get(i);
                if ((b == '"' || b == '{' || b == '[' || b == ',' || b == ']' || b == '}' || b == '\\') && random.nextInt(3) == 0) {
                    pick = i;
                    break;
                }
            }
            out.write(allowed.get(pick));
            f = next.get(pick);
        }
    }

    static String strictUtf8(byte[] b) throws Exception {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
    }

    @Test
    void compactValuesOfTheSchemaAreAdmittedAndWrongOnesAreNot() throws Exception {
        SchemaGrammar g = SchemaGrammar.of(JSON.readTree(PERSON));
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\"],\"kind\":12}")).isTrue();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":-0,\"email\":null,\"height\":1.5e-3,\"tags\":[\"ab\",\"b\\\"q\",\"ü\"],"
                + "\"active\":false,\"address\":{\"city\":\"Oslo\",\"zip\":\"12345\"},\"kind\":null}")).isTrue();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\"]}")).as("required kind missing").isFalse();
        assertThat(g.admits("{\"age\":41,\"name\":\"Ann\",\"tags\":[\"a\"],\"kind\":1}")).as("out of order").isFalse();
        assertThat(g.admits("{\"name\":\"\",\"age\":41,\"tags\":[\"a\"],\"kind\":1}")).as("minLength").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":4.5,\"tags\":[\"a\"],\"kind\":1}")).as("integer").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[],\"kind\":1}")).as("minItems").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\",\"a\",\"a\",\"a\"],\"kind\":1}")).as("maxItems").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"c\"],\"kind\":1}")).as("enum").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\"],\"kind\":1,\"x\":1}")).as("additional").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\", \"age\":41,\"tags\":[\"a\"],\"kind\":1}")).as("whitespace").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":041,\"tags\":[\"a\"],\"kind\":1}")).as("leading zero").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\"],\"kind\":1}x")).as("trailing").isFalse();
        assertThat(g.admits("{\"name\":\"A\u0001\",\"age\":41,\"tags\":[\"a\"],\"kind\":1}")).as("control char").isFalse();
        assertThat(g.admits("{\"name\":\"Ann\",\"age\":41,\"tags\":[\"a\"],\"kind\":123}")).as("enum prefix").isFalse();
        assertThat(SchemaGrammar.anyObject().admits("{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\"}")).isTrue();
        assertThat(SchemaGrammar.anyObject().admits("[1]")).isFalse();
    }

    @Test
    void stringLengthCountsCharactersNotBytes() throws Exception {
        SchemaGrammar g = SchemaGrammar.of(JSON.readTree("{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}"));
        assertThat(g.admits("\"üé\"")).isTrue();
        assertThat(g.admits("\"\\n\\u00e9\"")).isTrue();
        assertThat(g.admits("\"ü\"")).isFalse();
        assertThat(g.admits("\"abc\"")).isFalse();
    }

    @Test
    void invalidUtf8IsNeverAdmittedInStrings() {
        SchemaGrammar g = SchemaGrammar.anyObject();
        GrammarFrame f = GrammarFrame.step(g.start(), "{\"".getBytes(StandardCharsets.UTF_8));
        assertThat(GrammarFrame.step(f, new byte[] {(byte) 0xC0})).as("overlong lead").isNull();
        assertThat(GrammarFrame.step(f, new byte[] {(byte) 0x80})).as("lone continuation").isNull();
        assertThat(GrammarFrame.step(f, new byte[] {(byte) 0xED, (byte) 0xA0})).as("surrogate").isNull();
        assertThat(GrammarFrame.step(f, new byte[] {(byte) 0xE2, (byte) 0x82, (byte) 0xAC})).as("euro sign").isNotNull();
    }

    @Test
    void schemasConstrainedDecodingCannotFollowAreRefusedNamingKeywordAndPlace() {
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"}}}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("'format'").hasMessageContaining("$.properties.d");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"type\":\"integer\",\"minimum\":0}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("'minimum'");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"anyOf\":[{\"type\":\"object\"},{\"type\":\"object\",\"properties\":{\"a\":{}}}]}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("alternatives 0 and 1");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"$ref\":\"#/$defs/missing\"}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("#/$defs/missing");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"$ref\":\"https://example.com/s.json\"}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("https://example.com/s.json");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("'b' is required");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"type\":\"strng\"}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("'strng'");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"type\":\"object\","
                + "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}},\"required\":[\"x\"]}}}")))
                .as("only infinite values").isInstanceOf(SchemaException.class).hasMessageContaining("no finite value");
        assertThatThrownBy(() -> SchemaGrammar.of(JSON.readTree("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}")))
                .isInstanceOf(SchemaException.class).hasMessageContaining("maxItems 2 is below minItems 3");
    }

    @Test
    void aToolCallNamesOneOfTheFunctionsAndItsArgumentsFollowThatFunctionsSchema() throws Exception {
        java.util.Map<String, JsonNode> functions = new java.util.LinkedHashMap<>();
        functions.put("get_weather", JSON.readTree("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}"));
        functions.put("get_time", JSON.readTree("{\"type\":\"object\",\"properties\":{\"zone\":{\"enum\":[\"UTC\",\"CET\"]}},\"required\":[\"zone\"]}"));
        SchemaGrammar hermes = SchemaGrammar.toolCall(functions, SchemaGrammar.CallForm.HERMES);
        assertThat(hermes.admits("<tool_call>\n{\"name\":\"get_time\",\"arguments\":{\"zone\":\"CET\"}}\n</tool_call>")).isTrue();
        assertThat(hermes.admits("<tool_call>\n{\"name\":\"get_time\",\"arguments\":{\"city\":\"Oslo\"}}\n</tool_call>"))
                .as("arguments of the other function").isFalse();
        SchemaGrammar mistral = SchemaGrammar.toolCall(functions, SchemaGrammar.CallForm.MISTRAL);
        assertThat(mistral.admits("[TOOL_CALLS][{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}]")).isTrue();
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 100; i++) {
            String text = strictUtf8(walk(hermes, random, hermes.minLength() + 60));
            var parsed = dev.strata.engine.tokenizer.ToolCallParser.parse(text);
            assertThat(parsed.calls()).as(text).hasSize(1);
            var call = parsed.calls().getFirst();
            assertThat(functions).containsKey(call.name());
            Schema v = VALIDATORS.getSchema(functions.get(call.name()).toString());
            assertThat(v.validate(call.arguments())).as(text).isEmpty();
        }
    }
}
