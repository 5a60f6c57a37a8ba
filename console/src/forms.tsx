/** Form fields: a label bound to its control by id, and the control bound to a piece of state. */
import type { ComponentChildren, InputHTMLAttributes, TextareaHTMLAttributes } from "preact";

/** Omit for each member of a union: preact types an input's attributes as one member per `type`. */
type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

interface Controlled {
  id: string;
  label: ComponentChildren;
  value: string;
  onValue: (value: string) => void;
}

type InputProps = Controlled & Without<InputHTMLAttributes, keyof Controlled | "onInput">;

/** A label and its input, for a form that lays them out itself; other attributes go to the input. */
export function LabelledInput({ id, label, value, onValue, ...input }: InputProps) {
  return (
    <>
      <label for={id}>{label}</label>
      <input {...input} id={id} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
    </>
  );
}

/** One cell of a form grid: `wide` spans the row, and a hint becomes the control's description. */
export function FieldCell({
  id,
  label,
  wide,
  hint,
  children,
}: {
  id: string;
  label: ComponentChildren;
  wide?: boolean;
  hint?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class={wide ? "wide" : undefined}>
      <label for={id}>{label}</label>
      {children}
      {hint ? (
        <p id={hintId(id)} class="hint">
          {hint}
        </p>
      ) : null}
    </div>
  );
}

function hintId(id: string) {
  return `${id}-hint`;
}

export function Field({ wide, ...input }: InputProps & { wide?: boolean }) {
  return (
    <div class={wide ? "wide" : undefined}>
      <LabelledInput {...input} />
    </div>
  );
}

/** An option's value, or its value and the text shown for it. */
export type Choice = string | { value: string; text: string };

export function SelectField({
  id,
  label,
  value,
  onValue,
  options,
  hint,
}: Controlled & { options: readonly Choice[]; hint?: ComponentChildren }) {
  return (
    <FieldCell id={id} label={label} hint={hint}>
      <select
        id={id}
        aria-describedby={hint ? hintId(id) : undefined}
        value={value}
        onChange={(e) => onValue(e.currentTarget.value)}
      >
        {options.map((o) => {
          const c = typeof o === "string" ? { value: o, text: o } : o;
          return (
            <option key={c.value} value={c.value}>
              {c.text}
            </option>
          );
        })}
      </select>
    </FieldCell>
  );
}

export function TextAreaField({
  id,
  label,
  value,
  onValue,
  wide,
  ...textarea
}: Controlled & { wide?: boolean } & Omit<TextareaHTMLAttributes, keyof Controlled | "onInput">) {
  return (
    <FieldCell id={id} label={label} wide={wide}>
      <textarea {...textarea} id={id} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
    </FieldCell>
  );
}

/** A checkbox or radio button inside its label; other attributes go to the input. */
export function Check({
  label,
  ...input
}: { label: ComponentChildren } & Without<InputHTMLAttributes, "label">) {
  return (
    <label class="inline">
      <input {...input} /> {label}
    </label>
  );
}

/** A checkbox on a cell of its own in a form grid. */
export function CheckField({
  label,
  checked,
  onChecked,
}: {
  label: ComponentChildren;
  checked: boolean;
  onChecked: (checked: boolean) => void;
}) {
  return (
    <div>
      <Check
        label={label}
        type="checkbox"
        checked={checked}
        onChange={(e) => onChecked(e.currentTarget.checked)}
      />
    </div>
  );
}

/** The form's submit button, on a row of its own after the fields. */
export function SubmitRow({ busy, children }: { busy?: boolean; children: ComponentChildren }) {
  return (
    <div class="form-actions">
      <button type="submit" disabled={busy}>
        {children}
      </button>
    </div>
  );
}
