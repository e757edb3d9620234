/** Russian wording for codes, object types, roles and card states; tools and arguments in the
 * catalog's words (`glossary.json`, generated from the backend's catalog by `make schema`). */
import type { ToolState } from "./chatState.svelte";
import glossary from "../lib/generated/glossary.json";

const TOOL_LABELS: Record<string, string> = glossary.tools;
const ARGUMENT_LABELS: Record<string, string> = glossary.arguments;

/** «Деплой дашбордов в другое окружение» for `deploy_dashboard`; the name for a tool the
 * catalog did not know when the page was built. */
export function toolLabel(tool: string): string {
  return TOOL_LABELS[tool] ?? tool;
}

/** «Дашборды» for `dashboard_ids`; the name for an argument the glossary does not know. */
export function argumentLabel(key: string): string {
  return ARGUMENT_LABELS[key] ?? key;
}

/** Arguments that name an environment: the edit form offers the environments. */
export const ENVIRONMENT_ARGUMENTS: ReadonlySet<string> = new Set(glossary.environmentArguments);

export const ERROR_TITLES: Record<string, string> = {
  LLM_UNAVAILABLE: "Модель недоступна",
  TOOL_FAILURE: "Ошибка инструмента",
  TOOL_TIMEOUT: "Инструмент не ответил вовремя",
  TOOL_OUTCOME_UNKNOWN: "Статус операции неизвестен — проверьте статус",
  TOOL_NOT_RUN: "Операция не выполнена",
  CONVERSATION_BUSY: "Разговор отвечает в другой вкладке",
  CONVERSATION_ARCHIVED: "Разговор удалён — начните новый",
  INTERNAL_ERROR: "Внутренняя ошибка сервера",
  VALIDATION_ERROR: "Некорректный запрос",
  PAYLOAD_TOO_LARGE: "Запрос слишком большой",
  INVALID_CONTEXT: "Некорректный контекст страницы",
  INVALID_ATTACHMENT: "Файл нельзя отправить",
  UNAUTHORIZED: "Требуется вход",
  FORBIDDEN: "Недостаточно прав",
  NOT_FOUND: "Не найдено",
  NO_PENDING_CONFIRMATION: "Подтверждение больше не ожидается",
  ALREADY_DECIDED: "Подтверждение уже принято",
  CONFIRMATION_EXPIRED: "Время подтверждения истекло",
  NOT_RUNNING: "Ответ не идёт",
  STORAGE_FAILURE: "Ошибка хранилища",
  RATE_LIMITED: "Слишком много запросов",
  INVALID_CURSOR: "Некорректная позиция списка",
  METHOD_NOT_ALLOWED: "Метод не поддерживается",
  IDEMPOTENCY_KEY_REUSED: "Повтор запроса с другим содержимым",
  SERVER_UNREACHABLE: "Сервер недоступен",
};

export function errorTitle(code: string): string {
  return ERROR_TITLES[code] ?? `Ошибка ${code}`;
}

/** What a failed tool call means for the person and what to do about it, by its code; the
 * upstream's own words stay in a disclosure. */
const TOOL_ERROR_ADVICE: Record<string, string> = {
  TOOL_FAILURE:
    "ss-tools ответил ошибкой, результата нет. Повторите чуть позже; если ошибка не уходит, передайте подробности команде ss-tools.",
  TOOL_TIMEOUT: "ss-tools не ответил вовремя, результата нет. Повторите чуть позже.",
  FORBIDDEN: "ss-tools отказал: у вас нет прав на это действие в этом окружении.",
  NOT_FOUND: "ss-tools не нашёл такой объект в этом окружении — проверьте номер и окружение.",
  VALIDATION_ERROR: "ss-tools не принял аргументы вызова — уточните запрос.",
  UNAUTHORIZED: "Сессия истекла — обновите страницу.",
  TOOL_NOT_RUN: "Инструмент не запускался — ничего не изменено.",
};

/** An upstream answer that may have applied a write (the backend's «status unknown» words). */
const STATUS_UNKNOWN = /status unknown|статус (операции )?неизвестен/i;

export const WRITE_MAY_HAVE_APPLIED =
  "Статус операции неизвестен: изменение могло примениться. Проверьте его статус, прежде чем повторять.";

const RETRYABLE_READS: ReadonlySet<string> = new Set(glossary.retry.reads);
const RETRYABLE_CODES: ReadonlySet<string> = new Set(glossary.retry.codes);

const STATUS_CHECKS: Record<string, string> = glossary.retry.statusChecks;

/** The read that tells whether a write whose answer never came applied (the catalog's status
 * check), or null when the write declares none. */
export function statusCheckOf(tool: string): string | null {
  return STATUS_CHECKS[tool] ?? null;
}

/** Whether a failed call is a read that a second try can answer: its card offers «Повторить»
 * (the server checks again and refuses anything else). Never a write. */
export function offersRetry(tool: string, code: string | undefined): boolean {
  return RETRYABLE_READS.has(tool) && code !== undefined && RETRYABLE_CODES.has(code);
}

/** The sentence a failed tool card leads with: what happened and what to do. */
export function toolErrorAdvice(code: string | undefined, detail: string | undefined): string {
  if (detail && STATUS_UNKNOWN.test(detail)) return WRITE_MAY_HAVE_APPLIED;
  return (code && TOOL_ERROR_ADVICE[code]) || "Инструмент завершился ошибкой, результата нет.";
}

/** «Дашборд» for `dashboard`: the backend's words (`OBJECT_TYPE_LABELS`), which the
 * conversation search also finds a conversation by. */
export const OBJECT_TYPE_LABELS: Record<string, string> = glossary.objectTypes;

/** What the banner says of a link's object the page could not pass on, and what the agent
 * works with instead (the chips beside it show the environment and the page). */
export function droppedObjectText(dropped: {
  objectType: string;
  objectId: string | null;
  reason: "type" | "id";
}): string {
  const id = dropped.objectId ? ` #${dropped.objectId}` : "";
  if (dropped.reason === "id") {
    const kind = OBJECT_TYPE_LABELS[dropped.objectType] ?? dropped.objectType;
    return `Номер объекта из ссылки не распознан (${kind}${id}): агент работает без объекта — назовите номер в сообщении.`;
  }
  const named = dropped.objectType ? `«${dropped.objectType}»${id}` : `${id.trim()} без типа`;
  return `Объект из ссылки не распознан (${named}): агент работает без объекта — назовите объект и его номер в сообщении.`;
}

export const TOOL_STATE_LABELS: Record<ToolState, string> = {
  running: "выполняется",
  done: "готово",
  error: "ошибка",
  waiting: "ждёт подтверждения",
  not_run: "не выполнялся — ничего не изменено",
  expired: "не выполнялся — время подтверждения истекло, ничего не изменено",
  unknown: "статус неизвестен — проверьте статус",
};

export const CONFIRM_STATE_LABELS: Record<string, string> = {
  pending: "Ожидает подтверждения",
  confirmed: "Подтверждено",
  denied: "Отклонено",
  expired: "Истекло",
  cancelled: "Отменено",
  superseded: "Заменено изменённым вызовом — ничего не изменено",
  stale: "Устарела — ничего не изменено",
  awaiting_approval: "Подтверждено (1 из 2) — ждёт второго подтверждения, ничего не выполнено",
};

/** mm:ss of a duration in milliseconds (never negative). */
export function formatCountdown(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return `${String(minutes).padStart(2, "0")}:${String(seconds).padStart(2, "0")}`;
}

/** JSON for a <pre>, whatever the value is. */
export function pretty(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

const ROLE_LABELS: Record<string, string> = glossary.roles;
const TIER_LABELS: Record<string, string> = glossary.tiers;

/** «ss-dev — окружение разработки», «prod — рабочее окружение»: an environment with its tier in
 * words (an unknown tier as spelt; none: the id alone). */
export function environmentLabel(envId: string, tier: string | null | undefined): string {
  if (!tier) return envId;
  return `${envId} — ${TIER_LABELS[tier] ?? tier}`;
}

/** «инженер» for `engineer`, quoted as the server's refusals quote it; an unknown role as spelt. */
export function roleLabel(role: string): string {
  const words = ROLE_LABELS[role];
  return words ? `«${words}»` : role;
}

/** The approvals view: cards other people confirmed, waiting for the reader's second approval. */
export const APPROVAL_LABELS = {
  title: "Ждут вашего подтверждения",
  requested: "Запросил",
  approved: "подтвердил",
  until: "Второе подтверждение — до",
  approve: "Подтвердить вторым",
  deny: "Отклонить",
  refresh: "Обновить",
} as const;
