import { fireEvent, render, screen } from "@testing-library/svelte";
import { describe, expect, it, vi } from "vitest";
import PermissionCard from "./PermissionCard.svelte";

describe("PermissionCard", () => {
  it("says «Недостаточно прав» once, the action in words and its role, and offers only «Закрыть»", async () => {
    const onDismiss = vi.fn();
    render(PermissionCard, {
      props: {
        item: {
          kind: "permission",
          key: "p1",
          tool: "deploy_dashboard",
          requiredRole: "admin",
          text: "Недостаточно прав: «деплой дашбордов в другое окружение» требует роль «администратор».",
          dismissed: false,
        },
        onDismiss,
      },
    });
    const el = screen.getByTestId("permission-card");
    expect(el.getAttribute("role")).toBe("group");
    // the card's own title, not the server's text, says it
    expect(el.querySelector("h3")?.textContent).toContain("Недостаточно прав");
    expect(screen.getByTestId("permission-role").textContent?.trim()).toBe(
      "«Деплой дашбордов в другое окружение» требует роль «администратор».",
    );
    expect(el.textContent?.match(/Недостаточно прав/g)).toHaveLength(1);
    expect(el.textContent).not.toContain("deploy_dashboard");
    expect(el.textContent).not.toContain("admin");
    expect(screen.queryByTestId("confirm-accept")).toBeNull();
    const buttons = el.querySelectorAll("button");
    expect(buttons).toHaveLength(1);
    expect(buttons[0].textContent?.trim()).toBe("Закрыть");
    await fireEvent.click(screen.getByTestId("permission-dismiss"));
    expect(onDismiss).toHaveBeenCalledOnce();
  });
});
