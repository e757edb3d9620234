/** What a row of the conversation list says: the first request, then what the conversation was
 * about (the object and environment the server kept from the page it started on) and when it was
 * last active, in the reader's time zone. The one home of that wording. */
import type { ConversationSubject, ConversationSummary } from "../lib/rest";
import { OBJECT_TYPE_LABELS } from "./labels";

export interface ConversationRow {
  /** The first request (the conversation's title). */
  request: string;
  /** «Дашборд «Продажи» (#10)»; null when it started on no object. */
  object: string | null;
  /** The environment and when, «ss-dev · сегодня, 14:05» (either may be missing). */
  where: string;
  /** The whole row in one line, for a tooltip. */
  label: string;
}

/** «Дашборд «Продажи» (#10)», «Датасет #15»; null when there is no object the page can name. */
export function subjectLabel(subject: ConversationSubject | null | undefined): string | null {
  const type = subject?.object_type ? OBJECT_TYPE_LABELS[subject.object_type] : undefined;
  if (!subject || !type) return null;
  const { object_name: name, object_id: id } = subject;
  if (name && id) return `${type} «${name}» (#${id})`;
  if (name) return `${type} «${name}»`;
  return id ? `${type} #${id}` : type;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function dayOf(moment: Date, timeZone: string | undefined): string {
  return moment.toLocaleDateString("en-CA", { timeZone }); // 2026-12-03: comparable
}

/** «сегодня, 14:05», «вчера, 09:30», «3 декабря, 14:05», «31 декабря 2025, 09:00» in the given
 * time zone (the browser's unless told); "" for a time it cannot read. */
export function whenLabel(iso: string, now = new Date(), timeZone?: string): string {
  const moment = new Date(iso);
  if (!iso || Number.isNaN(moment.getTime())) return "";
  const time = moment.toLocaleTimeString("ru-RU", { hour: "2-digit", minute: "2-digit", timeZone });
  const day = dayOf(moment, timeZone);
  if (day === dayOf(now, timeZone)) return `сегодня, ${time}`;
  if (day === dayOf(new Date(now.getTime() - DAY_MS), timeZone)) return `вчера, ${time}`;
  const sameYear = day.slice(0, 4) === dayOf(now, timeZone).slice(0, 4);
  const date = new Intl.DateTimeFormat("ru-RU", {
    day: "numeric",
    month: "long",
    year: sameYear ? undefined : "numeric",
    timeZone,
  })
    .format(moment)
    .replace(/\s*г\.$/, ""); // «31 декабря 2025 г.» reads as a form's field; the year says it
  return `${date}, ${time}`;
}

/** A conversation as its row reads. */
export function conversationRow(
  item: ConversationSummary,
  now = new Date(),
  timeZone?: string,
): ConversationRow {
  const request = item.title.trim() || "Без названия";
  const object = subjectLabel(item.subject);
  const when = whenLabel(item.updated_at || item.created_at, now, timeZone);
  const where = [item.subject?.env_id, when].filter(Boolean).join(" · ");
  const details = [object, where].filter(Boolean).join(", ");
  return { request, object, where, label: details ? `${request} — ${details}` : request };
}
