package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class StopMatcherTest {

    @Test
    void holdsBackAPossibleStopAndCutsAtTheMatch() {
        SerialGenerator.StopMatcher m = new SerialGenerator.StopMatcher(List.of("END", "xy"));
        StringBuilder sent = new StringBuilder();
        sent.append(m.push("abcE"));
        assertThat(sent.toString()).isEqualTo("ab"); // "cE" may begin "END"
        sent.append(m.push("N"));
        assertThat(m.matched()).isFalse();
        sent.append(m.push("Dtail"));
        assertThat(m.matched()).isTrue();
        assertThat(sent.toString()).isEqualTo("abc");
        assertThat(m.push("more")).isEmpty();
        assertThat(m.flush()).isEmpty();
    }

    @Test
    void flushesTheHeldTailWhenNoStopMatches() {
        SerialGenerator.StopMatcher m = new SerialGenerator.StopMatcher(List.of("zzz"));
        String a = m.push("héllo wo");
        String b = m.push("rld z");
        assertThat(m.matched()).isFalse();
        assertThat(a + b + m.flush()).isEqualTo("héllo world z");
    }

    @Test
    void withoutStopsEverythingPassesAtOnce() {
        SerialGenerator.StopMatcher m = new SerialGenerator.StopMatcher(List.of());
        assertThat(m.push("\uD83D\uDE00 ok")).isEqualTo("\uD83D\uDE00 ok");
        assertThat(m.flush()).isEmpty();
    }

    @Test
    void earliestStopWinsAcrossDeltas() {
        SerialGenerator.StopMatcher m = new SerialGenerator.StopMatcher(List.of("cd", "bcdef"));
        String out = m.push("ab") + m.push("c") + m.push("def");
        assertThat(m.matched()).isTrue();
        assertThat(out).isEqualTo("ab");
    }
}
