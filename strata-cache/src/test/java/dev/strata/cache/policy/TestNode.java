package dev.strata.cache.policy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;

/** A policy node with settable attributes, for policy tests. */
final class TestNode extends PolicyNode {
    final String name;
    PriorityClass priority;
    boolean pinned;
    final long hash;

    TestNode(String name, PriorityClass priority) {
        this.name = name;
        this.priority = priority;
        this.hash = ObjectKey.of(name.hashCode() * 0x9E3779B97F4A7C15L + name.length()).hash64();
    }

    @Override
    public PriorityClass priority() {
        return priority;
    }

    @Override
    public boolean evictable() {
        return !pinned && priority != PriorityClass.ACTIVE;
    }

    @Override
    public long keyHash() {
        return hash;
    }

    @Override
    public String toString() {
        return name;
    }
}
