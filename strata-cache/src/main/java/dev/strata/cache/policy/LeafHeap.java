package dev.strata.cache.policy;

import java.util.Arrays;

/**
 * An indexed binary min-heap of {@link PolicyNode}s ordered by {@link PolicyNode#prefixValue}, for
 * {@link PrefixAwarePolicy}: each node keeps its index ({@link PolicyNode#heapIndex}), so removal and
 * re-keying are O(log n).
 *
 * <p>Invariants: {@code heap[i].heapIndex == i} for every {@code i < size}; a node is in at most one
 * heap at a time ({@code heapIndex == -1} when in none). Allocates only when the array grows
 * (doubling).
 *
 * <p>Threads: not thread-safe; guarded by the owning policy's lock.
 */
final class LeafHeap {
    private PolicyNode[] heap = new PolicyNode[64]; // [0, size): min-heap on prefixValue
    private int size;

    int size() {
        return size;
    }

    /** The node of least value, or null when empty. */
    PolicyNode min() {
        return size == 0 ? null : heap[0];
    }

    void add(PolicyNode node) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        heap[size] = node;
        node.heapIndex = size++;
        siftUp(node.heapIndex);
    }

    /** Removes {@code node}, which must be in this heap. */
    void remove(PolicyNode node) {
        int i = node.heapIndex;
        if (i < 0 || i >= size || heap[i] != node) {
            throw new IllegalStateException("node is not in this leaf heap (index " + i + ", size " + size + ")");
        }
        PolicyNode last = heap[--size];
        heap[size] = null;
        node.heapIndex = -1;
        if (last != node) {
            heap[i] = last;
            last.heapIndex = i;
            siftDown(i);
            siftUp(last.heapIndex);
        }
    }

    /** Restores the order after {@code node}'s value changed. */
    void fix(PolicyNode node) {
        siftDown(node.heapIndex);
        siftUp(node.heapIndex);
    }

    private void siftUp(int i) {
        PolicyNode n = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            PolicyNode p = heap[parent];
            if (n.prefixValue >= p.prefixValue) {
                break;
            }
            heap[i] = p;
            p.heapIndex = i;
            i = parent;
        }
        heap[i] = n;
        n.heapIndex = i;
    }

    private void siftDown(int i) {
        PolicyNode n = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int c = 2 * i + 1;
            PolicyNode child = heap[c];
            int r = c + 1;
            if (r < size && heap[r].prefixValue < child.prefixValue) {
                c = r;
                child = heap[c];
            }
            if (child.prefixValue >= n.prefixValue) {
                break;
            }
            heap[i] = child;
            child.heapIndex = i;
            i = c;
        }
        heap[i] = n;
        n.heapIndex = i;
    }
}
