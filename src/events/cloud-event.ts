// A stored event as the CloudEvents 1.0 JSON object every channel sends (feed, SSE, webhooks).
import type { EventRow } from './events.repository.js'
import type { CloudEvent } from './events.schema.js'

export function cloudEvent (e: EventRow): CloudEvent {
  return {
    specversion: '1.0',
    id: `evt_${e.seq}`,
    source: '/events',
    type: e.type as CloudEvent['type'],
    time: e.time,
    subject: e.subject,
    datacontenttype: 'application/json',
    data: e.data as CloudEvent['data']
  }
}
