/** The approvals view's state: the cards waiting for the reader's second approval, read again
 * every little while, and what the reader was told of each decision they made. */
import type { ApprovalItem, RestClient } from "../lib/rest";
import { ChatHttpError } from "../lib/errors";
import { errorTitle } from "./labels";

export const APPROVALS_POLL_MS = 5000;

export interface ToldApproval {
  key: string;
  call: string;
  text: string;
}

export class ApprovalsInbox {
  items = $state<ApprovalItem[]>([]);
  told = $state<ToldApproval[]>([]);
  sending = $state<string | null>(null);

  constructor(private readonly rest: RestClient) {}

  async refresh(): Promise<void> {
    try {
      const answer = await this.rest.approvals();
      this.items = answer.approvals;
    } catch {
      // The list is a convenience beside the chat: a failed read leaves it as it was
    }
  }

  async decide(item: ApprovalItem, decision: "approve" | "deny"): Promise<void> {
    this.sending = item.confirmation_id;
    let text: string;
    try {
      const outcome = await this.rest.decideApproval(item.confirmation_id, decision);
      text = outcome.detail;
    } catch (error) {
      // The server's refusals of this view are said in Russian where they explain (yours to
      // approve or not); a bare code reads as its title
      text =
        error instanceof ChatHttpError
          ? /[а-яё]/i.test(error.detail)
            ? error.detail
            : errorTitle(error.code)
          : errorTitle("SERVER_UNREACHABLE");
    } finally {
      this.sending = null;
    }
    this.told = [...this.told, { key: item.confirmation_id, call: item.call, text }];
    await this.refresh();
  }
}
