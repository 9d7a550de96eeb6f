export { instrumentJobs, observePool, recordDelivery, trackOpenStream, registry } from './registry.js'
export { registerMetrics, type MetricsConfig } from './metrics-routes.js'
