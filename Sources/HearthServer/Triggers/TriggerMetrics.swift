import Prometheus

/// One trigger's series in its database's metrics registry, labelled `trigger="<name>"`:
/// deliveries by outcome, retries, lag in revisions and seconds, dead letters, lost revisions.
struct TriggerMetrics {
    let delivered: Counter
    let failed: Counter
    let retried: Counter
    let lagRevisions: Gauge
    let lagSeconds: Gauge
    let deadLetters: Gauge
    let lostRevisions: Gauge
    let lost: Gauge

    init(registry: PrometheusCollectorRegistry, trigger: String) {
        let labels = [("trigger", trigger)]
        delivered = registry.makeCounter(
            descriptor: Self.name(
                "trigger_deliveries", unit: "total",
                help:
                    "Trigger deliveries by outcome: delivered (a 2xx answer) or failed (anything else, or none in time)."
            ), labels: labels + [("outcome", "delivered")])
        failed = registry.makeCounter(
            descriptor: Self.name(
                "trigger_deliveries", unit: "total",
                help:
                    "Trigger deliveries by outcome: delivered (a 2xx answer) or failed (anything else, or none in time)."
            ), labels: labels + [("outcome", "failed")])
        retried = registry.makeCounter(
            descriptor: Self.name(
                "trigger_retries", unit: "total", help: "Failed trigger deliveries scheduled for another attempt."),
            labels: labels)
        lagRevisions = registry.makeGauge(
            descriptor: Self.name(
                "trigger_lag_revisions", unit: "",
                help: "Revisions logged after the trigger's cursor (every event up to it delivered)."), labels: labels)
        lagSeconds = registry.makeGauge(
            descriptor: Self.name(
                "trigger_lag_seconds", unit: "", help: "How long the trigger's oldest undelivered event has waited."),
            labels: labels)
        deadLetters = registry.makeGauge(
            descriptor: Self.name("trigger_dead_letters", unit: "", help: "Events in the trigger's dead-letter list."),
            labels: labels)
        lostRevisions = registry.makeGauge(
            descriptor: Self.name(
                "trigger_lost_revisions", unit: "",
                help: "Revisions whose events the trigger lost to the backlog bound."), labels: labels)
        lost = registry.makeGauge(
            descriptor: Self.name(
                "trigger_lost", unit: "",
                help: "1 while the trigger is marked as having lost events (until replay or removal)."), labels: labels)
    }

    private static func name(_ name: String, unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "hearth", metricName: name, unitName: unit, helpText: help)
    }

    /// Takes the series out of `registry` (the trigger was removed).
    func unregister(from registry: PrometheusCollectorRegistry) {
        for counter in [delivered, failed, retried] { registry.unregisterCounter(counter) }
        for gauge in [lagRevisions, lagSeconds, deadLetters, lostRevisions, lost] { registry.unregisterGauge(gauge) }
    }

    func update(_ status: TriggerStatus) {
        lagRevisions.set(to: Double(status.lagRevisions))
        lagSeconds.set(to: status.lagSeconds)
        deadLetters.set(to: Double(status.deadLetters))
        lostRevisions.set(to: Double(status.lostRevisions))
        lost.set(to: status.state == .lost ? 1.0 : 0.0)
    }
}
