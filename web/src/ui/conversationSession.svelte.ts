/** One tab's conversation: what the page shows of it, and everything a click or a stream does to
 * it (sending, the stream, the cards' decisions, re-attaching, the tab gate, errors and retries).
 * The components read it and call it; it knows no element but the URL's hash. */
import { tick } from "svelte";
import { getToken } from "../lib/auth";
import { connect, type ChatAction, type ChatClient, type Submission } from "../lib/client";
import { DEFAULT_CONFIG, loginUrlFor, type PageConfig } from "../lib/config";
import { ChatHttpError, ChatNetworkError, isNetworkFailure } from "../lib/errors";
import { isConfirmRequired, isStreamToken, isText } from "../lib/events";
import {
  restClient,
  type AttachmentInfo,
  type EnvironmentItem,
  type HistoryMessage,
  type RestClient,
} from "../lib/rest";
import {
  droppedFromUrl,
  uiContextFromUrl,
  withEnvironment,
  type DroppedObject,
  type UIContext,
} from "../lib/uiContext";
import { uploadFile } from "../lib/uploads";
import { AttachmentTray } from "./attachmentTray.svelte";
import { openDownload } from "./attachments";
import { ChatState, type ConfirmItem, type ErrorItem, type ToolItem } from "./chatState.svelte";
import { noteServerDate } from "./clock";
import type { EditRefusal } from "./editArgs";
import { fileLimitsFrom, MAX_MESSAGE_CHARS } from "./limits";
import { conversationFromHash, resumePointAfter, writeHash } from "./session";

/** The backend as the session uses it: the chat's streams and the REST API. */
export interface PageClients {
  chat: ChatClient;
  rest: RestClient;
}

/** The local build's demo sign-in; without it (the deployable build) a 401 goes to the login
 * page. */
export interface DemoSignin {
  /** Nobody is signed in: the sign-in opens before anything is read. */
  signedOut(): boolean;
  /** A 401: the token is dropped and the sign-in opens. */
  forget(): void;
}

export interface SessionOptions {
  demoSignin?: DemoSignin;
  /** An item was added or changed: the list follows the end when the reader is there. */
  onItem?: () => void;
  /** The conversation goes on from the composer (a message sent, a card answered, a new one). */
  focusComposer?: () => void;
}

/** What browser tests and the benchmark read: the first load is done, streams ended so far. */
export interface PageProbe {
  ready: boolean;
  streamsEnded: number;
}

export type Decision = "confirm" | "deny" | "edit";

/** How often a tab whose conversation answers in another tab asks whether it is free. */
const GATE_POLL_MS = 2000;
/** The history a re-attach reads, at most (pages of 100). */
const HISTORY_PAGES = 20;

function mark(name: string): void {
  try {
    performance.mark(name);
  } catch {
    // marks are for the benchmark only
  }
}

/** Runs `fn` once the page has painted what changed. */
export function afterPaint(fn: () => void): void {
  void tick().then(() => requestAnimationFrame(() => fn()));
}

export class ConversationSession {
  readonly chat = new ChatState();
  /** The composer's files, uploaded as they are attached. */
  readonly tray = new AttachmentTray((file, onProgress, signal) =>
    this.#uploadAttachment(file.name, file.contentType, file.file, onProgress, signal),
  );
  readonly probe: PageProbe = { ready: false, streamsEnded: 0 };

  config = $state.raw<PageConfig>(DEFAULT_CONFIG);
  rest = $state.raw<RestClient | null>(null);
  #chatClient: ChatClient | null = null;

  /** The page's context as the URL (or the conversation's history) gave it. */
  baseContext = $state<UIContext>(uiContextFromUrl(""));
  envId = $state<string | null>(null);
  /** What the agent is told: the context with the environment chosen now. */
  uiContext = $derived(withEnvironment(this.baseContext, this.envId));
  /** The conversation predates page contexts: it goes on without one. */
  contextUnavailable = $state(false);
  /** What the visit's link named as its object and the page could not pass on (null: none);
   * the banner says so while the context is the link's. */
  droppedObject = $state<DroppedObject | null>(null);
  environments = $state<EnvironmentItem[]>([]);

  conversationId = $state<string | null>(null);
  current = $state.raw<Submission | null>(null);
  online = $state(true);
  /** Another tab's turn holds the conversation: sending waits. */
  busyElsewhere = $state(false);
  loadingConversation = $state(false);
  started = $state(false);
  signinOpen = $state(false);
  /** Changing it reloads the sidebar's first page. */
  sidebarRefresh = $state(0);
  /** The message being written. */
  draft = $state("");

  #turn = 0;
  #currentDone: Promise<void> = Promise.resolve();
  readonly #retryActions = new Map<string, () => void>();
  #gateTimer: ReturnType<typeof setInterval> | undefined;
  #approvalTimer: ReturnType<typeof setInterval> | undefined;
  /** Which call of `reattach` is the latest: an older one (another conversation was opened
   * meanwhile) neither shows its history nor resumes its stream. */
  #attachGeneration = 0;

  readonly #options: SessionOptions;

  constructor(options: SessionOptions = {}) {
    this.#options = options;
  }

  /** The chosen environment's tier (the banner's badge). */
  get tier(): string | null {
    return this.environments.find((env) => env.id === this.envId)?.tier ?? null;
  }

  /** A stream is being read: the page answers, sending waits. */
  get streaming(): boolean {
    return this.current !== null;
  }

  get tooLong(): boolean {
    return this.draft.length > MAX_MESSAGE_CHARS;
  }

  get canSend(): boolean {
    return (
      !this.tooLong &&
      this.started &&
      !this.streaming &&
      !this.busyElsewhere &&
      !this.loadingConversation &&
      (this.draft.trim() !== "" || this.tray.attached.length > 0) &&
      !this.tray.uploading &&
      !this.tray.failed &&
      !this.signinOpen
    );
  }

  /** Files may be attached (chosen, dropped, pasted). */
  get canAttach(): boolean {
    return this.started && !this.signinOpen;
  }

  // ---- start ---------------------------------------------------------------------------

  /** The visit's context, from the URL's query, before anything is read from the server. */
  visit(search: string): void {
    this.baseContext = uiContextFromUrl(search);
    this.droppedObject = droppedFromUrl(search);
    this.envId = this.baseContext.envId;
  }

  /** Connects with the page's configuration (or the clients given), then starts. */
  async begin(config: PageConfig, clients?: PageClients): Promise<void> {
    this.config = config;
    const origin = config.apiOrigin;
    this.#chatClient =
      clients?.chat ??
      connect(origin, {
        getToken,
        reconnectAttempts: config.reconnectAttempts,
        reconnectDelayMs: config.reconnectDelayMs,
        stallTimeoutMs: config.stallTimeoutMs,
        onConnectionChange: (value) => (this.online = value),
        onServerDate: (date) => noteServerDate(date),
      });
    this.rest =
      clients?.rest ?? restClient(origin, { getToken, onServerDate: (d) => noteServerDate(d) });
    await this.start();
    this.probe.ready = true;
  }

  /** The environments and the file limits, then the tab's conversation (the URL's hash). */
  async start(): Promise<void> {
    if (this.#options.demoSignin?.signedOut()) {
      this.signinOpen = true;
      return;
    }
    const [loaded] = await Promise.all([this.#loadEnvironments(), this.#loadFileLimits()]);
    this.started = true;
    this.envId = this.#knownEnv(this.baseContext.envId);
    if (!loaded) return;
    const id = conversationFromHash(window.location.hash);
    const mine = this.conversationId === null || this.conversationId === id;
    if (id && !this.current && mine) await this.#reattach(id);
  }

  signedIn(): void {
    this.signinOpen = false;
    this.chat.clear();
    this.sidebarRefresh += 1;
    void this.start();
  }

  /** The hash changed (back, forward, a pasted link): the tab shows the conversation it names. */
  followHash(): void {
    const id = conversationFromHash(window.location.hash);
    if (id === this.conversationId) return;
    if (id) void this.openConversation(id);
    else if (this.conversationId) void this.newConversation();
  }

  /** The page goes: no poll, no upload outlives it. */
  dispose(): void {
    clearInterval(this.#gateTimer);
    clearInterval(this.#approvalTimer);
    this.tray.clear();
  }

  #knownEnv(id: string | null): string | null {
    if (id === null) return null;
    if (this.environments.length === 0) return id; // the list could not be read: keep the page's
    return this.environments.some((env) => env.id === id) ? id : null;
  }

  async #loadEnvironments(): Promise<boolean> {
    const client = this.rest;
    if (!client) return false;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const answer = await this.#tracked(() => client.environments());
        this.environments = answer.items ?? [];
        return true;
      } catch (error) {
        if (!isNetworkFailure(error) || attempt >= this.config.reconnectAttempts) {
          this.showError(error, () => void this.start());
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, this.config.reconnectDelayMs));
      }
    }
  }

  /** The deployment's limits on files, read beside the environments; a failure keeps the
   * defaults (the server checks again, and says why in the same words). */
  async #loadFileLimits(): Promise<void> {
    if (!this.rest) return;
    try {
      this.tray.limits = fileLimitsFrom(await this.rest.fileLimits());
    } catch {
      // the environments' read, made at the same time, shows what went wrong
    }
  }

  // ---- errors --------------------------------------------------------------------------

  /** An error as the page shows it: a 401 signs in again, anything else is a card; `retry` is
   * what its «Повторить» repeats, if anything. */
  showError(error: unknown, retry?: () => void): void {
    if (error instanceof ChatHttpError) {
      this.online = true;
      if (error.status === 401) {
        const demo = this.#options.demoSignin;
        if (demo) {
          demo.forget();
          this.signinOpen = true;
        } else {
          window.location.assign(loginUrlFor(this.config.loginUrl, window.location.href));
        }
        return;
      }
      this.#offerRetry(this.chat.addError(error.code, error.detail, error.status), retry);
      return;
    }
    if (error instanceof ChatNetworkError || isNetworkFailure(error)) {
      this.online = false;
      const detail = "Не удалось связаться с сервером. Проверьте сеть и повторите.";
      this.#offerRetry(this.chat.addError("SERVER_UNREACHABLE", detail), retry);
      return;
    }
    this.chat.addError("INTERNAL_ERROR", error instanceof Error ? error.message : String(error));
  }

  /** A REST call that keeps the connection indicator honest. */
  async #tracked<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      this.online = true;
      return result;
    } catch (error) {
      if (isNetworkFailure(error)) this.online = false;
      else if (error instanceof ChatHttpError) this.online = true;
      throw error;
    }
  }

  /** «Повторить» repeats exactly what failed, and only that: an error card with nothing to
   * repeat (a failed list, a refused decision) offers no retry, never a re-send of some message. */
  #offerRetry(item: ErrorItem, retry: (() => void) | undefined): void {
    if (retry && item.retry) this.#retryActions.set(item.key, retry);
    else if (!this.#retryActions.has(item.key)) item.retry = false;
  }

  retry(key: string): void {
    const action = this.#retryActions.get(key);
    if (!action) return;
    // The retry replaces the failed attempt: its card goes, the new attempt's outcome shows.
    this.chat.remove(key);
    this.#retryActions.delete(key);
    action();
  }

  // ---- streaming -----------------------------------------------------------------------

  /** Reads one stream into the chat; `retry` is what an error the stream reports may repeat
   * (the message of this turn), if anything. */
  async #run(submission: Submission, retry?: () => void, onAccepted?: () => void) {
    const n = ++this.#turn;
    let finished = () => {};
    this.#currentDone = new Promise<void>((resolve) => (finished = resolve));
    this.current = submission;
    let firstToken = true;
    mark(`submit-sent:${n}`);
    try {
      for await (const event of submission) {
        if (onAccepted) {
          // The chat answered with a stream: the message (and its files) is the conversation's.
          onAccepted();
          onAccepted = undefined;
        }
        if (submission.conversationId && submission.conversationId !== this.conversationId) {
          this.conversationId = submission.conversationId;
          writeHash(this.conversationId);
          this.contextUnavailable = false;
        }
        const item = this.chat.apply(event);
        if (item?.kind === "error") this.#offerRetry(item, retry);
        if (firstToken && (isStreamToken(event) || (isText(event) && event.content))) {
          firstToken = false;
          mark(`first-token-received:${n}`);
          afterPaint(() => mark(`first-token-painted:${n}`));
        }
        if (isConfirmRequired(event) && event.metadata.confirmation_id) {
          const id = event.metadata.confirmation_id;
          mark(`confirm-received:${id}`);
          afterPaint(() => mark(`confirm-painted:${id}`));
        }
        if (item) this.#options.onItem?.();
      }
    } finally {
      if (this.current === submission) this.current = null;
      this.chat.endTurn();
      this.sidebarRefresh += 1;
      this.probe.streamsEnded += 1;
      finished();
    }
  }

  #submit(
    text: string,
    action: ChatAction,
    extra: {
      confirmationId?: string | null;
      editedArgs?: Record<string, unknown>;
      lastEventId?: string | null;
      toolCallId?: string | null;
    } = {},
    files: AttachmentInfo[] = [],
  ): Submission | null {
    if (!this.#chatClient) return null;
    const refs = files.map((file) => ({ file_id: file.file_id }));
    return this.#chatClient.submit({ text, files: refs }, [this.conversationId, action], {
      ...extra,
      uiContext: this.uiContext,
    });
  }

  /** Sends the composer's message and files; a message the chat refused goes back to it. */
  async send(): Promise<void> {
    const text = this.draft.trim();
    const files = this.tray.attached;
    if (!this.canSend || (text === "" && files.length === 0)) return;
    this.draft = "";
    const sent = await this.#sendText(text, true, files);
    if (!sent && this.draft === "") this.draft = text;
    this.#focusComposer();
  }

  /** A new conversation's example question, sent as it is: it is a whole question, and one
   * click gets its answer (a write still stops at its card). The composer keeps what was typed. */
  async ask(text: string): Promise<void> {
    const ready = this.started && !this.signinOpen && !this.loadingConversation;
    if (!ready || this.streaming || this.busyElsewhere) return;
    await this.#sendText(text, true);
  }

  async #sendText(text: string, addBubble: boolean, files: AttachmentInfo[] = []) {
    if (!this.#chatClient) return false;
    if (this.conversationId && (await this.#gateBusy(this.conversationId))) return false;
    const bubble = addBubble ? this.chat.addUser(text, files) : null;
    const submission = this.#submit(text, null, {}, files);
    if (!submission) return false;
    // Once the chat accepted the message its files are the conversation's: a retry of its answer
    // repeats the text alone (the files were checked and kept); before that, the files go again.
    let accepted = false;
    const again = () => void this.#sendText(text, false, accepted ? [] : files);
    const ids = files.map((file) => file.file_id);
    try {
      await this.#run(submission, again, () => {
        accepted = true;
        this.tray.release(ids);
      });
    } catch (error) {
      const code = error instanceof ChatHttpError ? error.code : null;
      if (code === "CONVERSATION_BUSY" || code === "INVALID_ATTACHMENT") {
        // Refused before anything was written (another tab took the conversation between the
        // gate and the send, or a file did not pass the chat's checks): the message and its
        // files go back to the composer, and the refusal says why.
        if (bubble) this.chat.remove(bubble.key);
        this.showError(error);
        if (code === "CONVERSATION_BUSY" && this.conversationId)
          void this.#gateBusy(this.conversationId);
        return false;
      }
      this.showError(error, again);
    }
    return true;
  }

  /** «Повторить» on a failed read (`retry`: the server runs that read again, same tool,
   * arguments and page as the call) or «Проверить статус» on a write whose answer never came
   * (`check_status`: the read the catalog declares for it); the result streams in as a new
   * call of the conversation. */
  async readAgain(item: ToolItem, action: "retry" | "check_status"): Promise<void> {
    if (!item.toolCallId || item.retried || !this.#chatClient) return;
    if (this.current) await this.#currentDone;
    if (this.conversationId && (await this.#gateBusy(this.conversationId))) return;
    const submission = this.#submit("", action, { toolCallId: item.toolCallId });
    if (!submission) return;
    item.retried = true;
    try {
      await this.#run(submission);
    } catch (error) {
      item.retried = false; // refused before anything ran: the card may offer it again
      this.showError(error);
    }
  }

  /** Stops the run: the stream ends with the server's word on what became of it. */
  async stop(): Promise<void> {
    const submission = this.current;
    if (!submission) return;
    try {
      await submission.cancel();
    } catch (error) {
      this.showError(error);
    }
  }

  /** Answers a card; what the card does next (wait again, say why) is in the result. */
  async decide(
    item: ConfirmItem,
    action: Decision,
    editedArgs?: Record<string, unknown>,
  ): Promise<void | "retry" | EditRefusal> {
    if (!item.confirmationId) return "retry";
    item.sending = true;
    // The card arrives just before stream_end: a click in between waits for the stream's end.
    if (this.current) await this.#currentDone;
    const submission = this.#submit("", action, {
      confirmationId: item.confirmationId,
      editedArgs,
    });
    if (!submission) return "retry";
    try {
      await this.#run(submission);
      this.#focusComposer(); // the card is answered: the conversation goes on there
      if (item.state === "awaiting_approval" && this.conversationId) {
        this.#followApproval(this.conversationId, item.confirmationId);
      }
    } catch (error) {
      const code = error instanceof ChatHttpError ? error.code : null;
      if (action === "edit" && (code === "VALIDATION_ERROR" || code === "FORBIDDEN")) {
        // The edited call was refused before anything was decided: the card still waits, and
        // says why beside what the user typed (fix it, confirm the original, or deny).
        item.sending = false;
        return { refused: (error as ChatHttpError).detail };
      }
      this.showError(error);
      if (code === "FORBIDDEN" || code === "CONVERSATION_BUSY") {
        // Refused before anything was decided: the card still waits and may be answered again.
        item.sending = false;
        return "retry";
      }
      if (code === "CONFIRMATION_EXPIRED") {
        item.state = "expired"; // the server says so: nothing ran
        return undefined;
      }
      // Decided elsewhere (another tab), no longer waiting, or the answer may not have arrived:
      // the card cannot say what happened, the conversation can. Re-attach to show it.
      if (this.conversationId) void this.#reattach(this.conversationId);
      return undefined;
    }
  }

  /** The conversation goes on in the composer, unless a card waits for a decision: that card
   * took the focus when it appeared, and keeps it. */
  #focusComposer(): void {
    if (!this.chat.lastPendingConfirm()) this.#options.focusComposer?.();
  }

  // ---- files ---------------------------------------------------------------------------

  /** Uploads a file the person attached: the REST API's grant, then the bytes to the bucket. */
  async #uploadAttachment(
    name: string,
    contentType: string,
    file: File,
    onProgress: (fraction: number) => void,
    signal: AbortSignal,
  ): Promise<string> {
    const client = this.rest;
    if (!client) throw new Error("нет клиента");
    const grant = await this.#tracked(() =>
      client.requestUpload(name, contentType, file.size, this.conversationId),
    ).catch((error: unknown) => {
      if (error instanceof ChatHttpError && error.status === 401) this.showError(error);
      throw error;
    });
    await uploadFile(grant.upload, file, onProgress, { signal });
    return grant.file_id;
  }

  /** A message's file: a link from the REST API, opened as a download. */
  async download(file: AttachmentInfo): Promise<void> {
    const client = this.rest;
    if (!client) return;
    try {
      const link = await this.#tracked(() => client.downloadLink(file.file_id));
      openDownload(link.url, file.name);
    } catch (error) {
      this.showError(error);
    }
  }

  /** A tool's whole output, which its card showed summarised. */
  loadFull(ref: string): Promise<unknown> {
    const client = this.rest;
    if (!client) return Promise.reject(new Error("нет клиента"));
    return this.#tracked(() => client.request("GET", ref));
  }

  // ---- the multi-tab gate ----------------------------------------------------------------

  /** Whether another tab's turn holds the conversation; if so, sending waits and the tab polls
   * until it is free, then re-reads the conversation (that turn) before the user goes on. */
  async #gateBusy(id: string): Promise<boolean> {
    const client = this.rest;
    if (!client) return false;
    try {
      const state = await this.#tracked(() => client.active(id));
      if (!state.active) {
        this.busyElsewhere = false;
        return false;
      }
    } catch (error) {
      if (error instanceof ChatHttpError && error.status === 404) return false;
      this.showError(error);
      return true;
    }
    this.busyElsewhere = true;
    clearInterval(this.#gateTimer);
    this.#gateTimer = setInterval(async () => {
      if (this.conversationId !== id) {
        this.#resetGate();
        return;
      }
      try {
        const state = await client.active(id);
        this.online = true;
        if (!state.active) {
          this.#resetGate();
          // The other tab's turn is in the history now: show it before this tab adds to it.
          void this.#reattach(id);
        }
      } catch (error) {
        if (isNetworkFailure(error)) this.online = false;
      }
    }, GATE_POLL_MS);
    return true;
  }

  #resetGate(): void {
    clearInterval(this.#gateTimer);
    clearInterval(this.#approvalTimer);
    this.busyElsewhere = false;
  }

  /** A card confirmed once waits for a second person, whose decision runs (or not) in this
   * conversation without this tab: the tab watches the conversation until the card is no longer
   * the one it waits on and its turn is over, then shows it from the history. */
  #followApproval(id: string, confirmationId: string): void {
    const client = this.rest;
    if (!client) return;
    clearInterval(this.#approvalTimer);
    this.#approvalTimer = setInterval(async () => {
      if (this.conversationId !== id) {
        clearInterval(this.#approvalTimer);
        return;
      }
      try {
        const state = await client.active(id);
        this.online = true;
        if (!state.active && state.pending_confirmation_id !== confirmationId) {
          clearInterval(this.#approvalTimer);
          void this.#reattach(id);
        }
      } catch (error) {
        if (isNetworkFailure(error)) this.online = false;
      }
    }, GATE_POLL_MS);
  }

  // ---- conversations -------------------------------------------------------------------

  async #abandonCurrent(): Promise<void> {
    const submission = this.current;
    if (submission) {
      this.current = null;
      await submission.cancel().catch(() => undefined);
    }
  }

  async newConversation(): Promise<void> {
    await this.#abandonCurrent();
    this.#resetGate();
    this.conversationId = null;
    this.chat.clear();
    writeHash(null);
    this.contextUnavailable = false;
    this.visit(window.location.search);
    this.envId = this.#knownEnv(this.baseContext.envId);
    this.#focusComposer();
  }

  async openConversation(id: string): Promise<void> {
    const shown = id === this.conversationId && !this.loadingConversation;
    if (shown && this.chat.items.length > 0) return;
    await this.#abandonCurrent();
    this.#resetGate();
    await this.#reattach(id);
  }

  /** The sidebar deleted a conversation: the open one gives way to a new one. */
  deleted(id: string): void {
    if (id === this.conversationId) void this.newConversation();
  }

  /** Shows a conversation: its state, then its history, then (while a run holds it or a card
   * waits) the rest of its stream. */
  async #reattach(id: string): Promise<void> {
    const client = this.rest;
    if (!client) return;
    const generation = ++this.#attachGeneration;
    const stale = () => generation !== this.#attachGeneration;
    this.loadingConversation = true;
    this.conversationId = id;
    writeHash(id);
    this.chat.clear();
    try {
      // The state before the history: a turn stores its messages before it lets go of the
      // conversation, so a turn that reads as ended here is in the history read after it. (The
      // other order loses a turn that ends between the reads: neither shown nor resumed.)
      const state = await this.#tracked(() => client.active(id));
      const messages: HistoryMessage[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < HISTORY_PAGES; page += 1) {
        const history = await this.#tracked(() => client.history(id, { limit: 100, cursor }));
        messages.push(...history.items);
        cursor = history.next_cursor;
        if (!cursor) break;
      }
      if (stale()) return;
      this.chat.loadHistory(messages, state.pending_confirmation_id, state.active);
      this.#takeContextOf(messages);
      const waiting = this.chat.lastOpenConfirm();
      if (waiting?.state === "awaiting_approval" && waiting.confirmationId) {
        this.#followApproval(id, waiting.confirmationId);
      }
      this.loadingConversation = false;
      if (state.active || state.pending_confirmation_id) {
        // The history ends where the stream must pick up: a running turn's events replay from
        // its user message on, a finished turn's (a waiting card) are all in the history.
        const lastEventId = resumePointAfter(id, messages);
        const submission = this.#submit("", "resume", { lastEventId });
        if (submission) {
          try {
            await this.#run(submission);
          } catch (error) {
            this.showError(error);
          }
        }
      }
    } catch (error) {
      this.loadingConversation = false;
      if (error instanceof ChatHttpError && error.status === 404) {
        const detail = "Разговор не найден (или принадлежит другому пользователю).";
        this.chat.addError(error.code, detail);
        this.conversationId = null;
        writeHash(null);
        return;
      }
      this.showError(error, () => void this.#reattach(id));
    } finally {
      this.loadingConversation = false;
      this.#options.onItem?.();
    }
  }

  /** The context the conversation's messages were written in goes on with it. */
  #takeContextOf(messages: HistoryMessage[]): void {
    const stored = [...messages].reverse().find((m) => m.ui_context)?.ui_context ?? null;
    if (messages.length > 0 && stored === null) {
      // A conversation from before page contexts: it goes on without one, never with the
      // context of this visit's URL or of the conversation open before it.
      this.contextUnavailable = true;
      this.droppedObject = null;
      this.baseContext = uiContextFromUrl("");
      this.envId = null;
    } else if (stored) {
      this.contextUnavailable = false;
      this.droppedObject = null;
      this.baseContext = { ...uiContextFromUrl(""), ...stored };
      this.envId = stored.envId ?? null;
    }
  }
}
