/** The c-consumer example, on the module path: it reads dlpack4j's core module only. */
module example.cconsumer {
    requires io.github.dlpack4j.core;
}
