package io.github.dlpack4j.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

class CpuYieldTest {
    @Test
    @EnabledOnOs({OS.LINUX, OS.MAC})
    void onLinuxAndMacOsAPauseYieldsTheCpuThroughTheCLibrary() {
        assertThat(CpuYield.yieldsTheCpu()).isTrue();
    }

    @Test
    void aPauseReturnsOnAPlatformThreadAndOnAVirtualThread() throws Exception {
        AtomicInteger paused = new AtomicInteger();
        Runnable pauses = () -> {
            for (int i = 0; i < 10_000; i++) {
                CpuYield.pause();
                paused.incrementAndGet();
            }
        };
        Thread.ofPlatform().start(pauses).join();
        Thread.ofVirtual().start(pauses).join();
        assertThat(paused).hasValue(20_000);
    }
}
