"""Datasets in the admin (docs/api.md#datasets-in-the-admin): listed, added, renamed and
deleted through the same services as /v1/datasets, with the same permissions (READ,
CREATE, EDIT, DELETE held on the dataset's environment; superusers all). The change page
shows a revision's cases as a table: the current one editable row by row
(agents/evals/table_views.py, agents/static/agents/dataset_cases.js), an older one read
only; and takes a file of cases (JSONL, CSV or YAML) as one new revision."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.paginator import Paginator
from django.core.validators import RegexValidator
from django.db.models import Count, F, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse

from agentbuilder.admin_forms import ServiceForm, form_for_user, model_fields
from agentbuilder.errors import DomainError, NotFound, PermissionDenied
from agentbuilder.users import User, request_user
from agents.access.permissions import (
    Action,
    environments_with,
    held_on_some_environment,
    holds_on_environment,
)
from agents.evals.admin_experiments import percent
from agents.evals.selectors import (
    dataset_cases,
    dataset_for,
    datasets_visible,
    experiments_visible,
)
from agents.evals.services import dataset_create, dataset_delete, dataset_update
from agents.evals.table import ROW_FIELDS, row_of
from agents.evals.table_views import NO_CASE, CaseAddView, CaseReplaceView, CasesRemoveView
from agents.evals.uploads import upload_cases
from agents.models import NAME_PATTERN, AgentType, Dataset, DatasetCase, Environment

CASES_PER_PAGE = 100
EXPERIMENTS_SHOWN = 20
NAME_HELP = "Letters, digits, '-', '_' and '.': unique in its environment."
# The table's columns: (row field, heading); a column only some agent types have lists them.
COLUMNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("input", "input", ()),
    ("output", "expected output", ()),
    ("contains", "contains (a line each)", ()),
    ("notContains", "not contains", ()),
    ("regex", "regex", ()),
    ("toolCalls", "tool calls", (AgentType.TOOL,)),
    ("more", "more (JSON)", ()),
    ("metadata", "metadata (JSON)", ()),
)
assert {c[0] for c in COLUMNS} == set(ROW_FIELDS)


DATASET_ACTIONS = (Action.CREATE, Action.EDIT, Action.DELETE)


class DatasetForm(ServiceForm):
    name = forms.CharField(
        max_length=100, help_text=NAME_HELP, validators=[RegexValidator(f"^{NAME_PATTERN}$")]
    )
    description = forms.CharField(
        max_length=500, required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80})
    )
    located = {
        "name": "name",
        "description": "description",
        "agentType": "agent_type",
        "environment": "environment",
    }

    class Meta:
        model = Dataset
        exclude = model_fields(Dataset)  # see ServiceForm


class DatasetAddForm(DatasetForm):
    environment = forms.ModelChoiceField(queryset=Environment.objects.none())
    agent_type = forms.ChoiceField(
        choices=AgentType.choices, help_text="The agents whose versions its cases test."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast(forms.ModelChoiceField, self.fields["environment"])
        field.queryset = environments_with(self.user, Action.CREATE)

    def apply(self, data: dict[str, Any]) -> Dataset:
        return dataset_create(
            user=self.user,
            environment=data["environment"],
            name=data["name"],
            agent_type=data["agent_type"],
            description=data["description"],
        )


class DatasetChangeForm(DatasetForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: Dataset = kwargs["instance"]
        kwargs["initial"] = {
            "name": instance.name,
            "description": instance.description,
            **(kwargs.get("initial") or {}),
        }
        super().__init__(*args, **kwargs)

    def apply(self, data: dict[str, Any]) -> Dataset:
        dataset = dataset_for(self.user, self.instance.pk, Action.EDIT)
        return dataset_update(
            user=self.user, dataset=dataset, name=data["name"], description=data["description"]
        )


def case_count() -> Count:
    """The cases of each dataset's current revision (agents.evals.selectors.in_revision)."""
    current = Q(cases__added_in__lte=F("revision")) & (
        Q(cases__removed_in__isnull=True) | Q(cases__removed_in__gt=F("revision"))
    )
    return Count("cases", filter=current)


ABOUT = ("environment", "agent_type", "revision", "created_by", "created_at", "modified_at")


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "environment", "agent_type", "revision", "cases", "modified_at")
    list_filter = (("environment", admin.RelatedOnlyFieldListFilter), "agent_type")
    list_select_related = ("environment",)
    search_fields = ("name", "description")
    change_form_template = "admin/agents/dataset/change_form.html"
    actions = None  # a delete may be refused (a gate uses the dataset): one at a time

    class Media:
        css = {"all": ["agents/datasets.css"]}

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<str:object_id>/upload/",
                self.admin_site.admin_view(self.upload_view),
                name="agents_dataset_upload",
            ),
            path(
                "<str:object_id>/cases/add/",
                CaseAddView.as_view(),
                name="agents_dataset_cases_add",
            ),
            path(
                "<str:object_id>/cases/remove/",
                CasesRemoveView.as_view(),
                name="agents_dataset_cases_remove",
            ),
            path(
                "<str:object_id>/cases/<str:case_id>/",
                CaseReplaceView.as_view(),
                name="agents_dataset_case",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Dataset]:
        return datasets_visible(request_user(request)).annotate(case_count=case_count())

    @admin.display(description="cases", ordering="case_count")
    def cases(self, dataset: Dataset) -> int:
        return int(getattr(dataset, "case_count", 0))

    def get_fieldsets(self, request: HttpRequest, obj: Dataset | None = None) -> Any:
        if obj is None:
            return [(None, {"fields": ("environment", "name", "agent_type", "description")})]
        return [(None, {"fields": ("name", "description", *ABOUT)})]

    def get_readonly_fields(
        self, request: HttpRequest, obj: Dataset | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else ABOUT

    def get_form(
        self, request: HttpRequest, obj: Dataset | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        kwargs["form"] = DatasetAddForm if obj is None else DatasetChangeForm
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    # Django's model permissions are not asked: the environment's grants are the rule.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_staff  # the queryset narrows

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._may(request, None, Action.CREATE)

    def has_change_permission(self, request: HttpRequest, obj: Dataset | None = None) -> bool:
        return self._may(request, obj, Action.EDIT)

    def has_delete_permission(self, request: HttpRequest, obj: Dataset | None = None) -> bool:
        return self._may(request, obj, Action.DELETE)

    def _may(self, request: HttpRequest, obj: Dataset | None, action: Action) -> bool:
        if not self.has_module_permission(request):
            return False
        user = request_user(request)
        if user.is_superuser:
            return True
        # The admin asks each several times while it renders a page (its sidebar, on every
        # page): once a request, and the three actions at once.
        held: dict[Any, Any] = request.__dict__.setdefault("datasets_held", {})
        if obj is None:
            if "anywhere" not in held:
                held["anywhere"] = held_on_some_environment(user, DATASET_ACTIONS)
            return action in held["anywhere"]
        key = (action, obj.environment_id)
        if key not in held:
            held[key] = holds_on_environment(user, obj.environment, action)
        return bool(held[key])

    def save_model(self, request: HttpRequest, obj: Dataset, form: Any, change: bool) -> None:
        """Nothing left to write: the form saved through the services while it validated."""

    def response_add(
        self, request: HttpRequest, obj: Dataset, post_url_continue: str | None = None
    ) -> HttpResponse:
        if "_addanother" in request.POST:
            return super().response_add(request, obj, post_url_continue)
        # A new dataset has no case yet: its page is where they are added.
        self.message_user(
            request,
            f"Dataset '{obj.name}' added: upload a file of cases, or add them one by one.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:agents_dataset_change", args=[obj.pk]))

    def delete_model(self, request: HttpRequest, obj: Dataset) -> None:
        dataset_delete(user=request_user(request), dataset=obj)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as exc:  # a gate uses it: the services' transaction wrote nothing
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:agents_dataset_change", args=[object_id]))

    def get_deleted_objects(
        self, objs: Iterable[Dataset], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # The dataset goes with its cases of every revision and its experiments; the
        # environment's DELETE allows all of it (Django would ask its model permissions).
        datasets = list(objs)
        cases = DatasetCase.objects.filter(dataset__in=datasets).count()
        counts = {"datasets": len(datasets), "cases of all revisions": cases}
        return [str(d) for d in datasets], counts, set(), []

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        dataset = self.get_object(request, object_id)
        if dataset is not None:  # a refused save shows the page again, with its cases
            may_edit = self.has_change_permission(request, dataset)
            extra_context = {**(extra_context or {}), **cases_context(request, dataset, may_edit)}
        return super().change_view(request, object_id, form_url, extra_context)

    def upload_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST a file of cases (multipart `file`): one new revision, or the file's errors
        shown above the page and nothing added."""
        page = HttpResponseRedirect(reverse("admin:agents_dataset_change", args=[object_id]))
        if request.method != "POST":
            return page
        dataset = _dataset(request_user(request), object_id, Action.EDIT)
        said = upload_cases(
            user=request_user(request), dataset=dataset, file=request.FILES.get("file")
        )
        for level, text in said:
            self.message_user(request, text, level)
        return page


def _dataset(user: User, object_id: str, action: Action) -> Dataset:
    try:
        return dataset_for(user, uuid.UUID(object_id), action)
    except (ValueError, NotFound):
        raise Http404("No dataset you may read has this id.") from None
    except PermissionDenied as exc:
        raise DjangoPermissionDenied(exc.detail) from None


def cases_context(request: HttpRequest, dataset: Dataset, may_edit: bool) -> dict[str, Any]:
    """The change page's case table: `?revision=` (the current one by default; an older
    one read only) and `?page=`."""
    revision = _revision(request, dataset)
    editable = may_edit and revision == dataset.revision
    pages = Paginator(dataset_cases(dataset, revision), CASES_PER_PAGE)
    shown = pages.get_page(request.GET.get("page"))
    columns = [(f, h) for f, h, types in COLUMNS if not types or dataset.agent_type in types]
    rows = [
        {
            "case": case,
            "cells": [(f, text) for f, text in row_of(_stored(case)).items() if _shown(f, columns)],
        }
        for case in shown
    ]
    pk = dataset.pk
    return {
        "experiments": _experiments(request_user(request), dataset),
        "cases_revision": revision,
        "cases_editable": editable,
        "cases_page": shown,
        "cases_rows": rows,
        "cases_columns": columns,
        "cases_count": pages.count,
        "revisions": range(dataset.revision, -1, -1),
        "cases_urls": {
            "add": reverse("admin:agents_dataset_cases_add", args=[pk]),
            "remove": reverse("admin:agents_dataset_cases_remove", args=[pk]),
            "case": reverse("admin:agents_dataset_case", args=[pk, NO_CASE]),
            "upload": reverse("admin:agents_dataset_upload", args=[pk]),
            "noCase": NO_CASE,
            "fields": [f for f, _ in columns],
        },
    }


def _experiments(user: User, dataset: Dataset) -> list[dict[str, Any]]:
    """The latest experiments on `dataset` of the agents `user` may read, each with the
    revision it ran (which the page shows, read only) and its pass rate."""
    latest = experiments_visible(user).filter(dataset=dataset).order_by("-created_at")
    return [
        {
            "experiment": e,
            "url": reverse("admin:agents_agent_experiment", args=[e.agent_id, e.pk]),
            "pass_rate": percent((e.summary or {}).get("passRate")),
        }
        for e in latest[:EXPERIMENTS_SHOWN]
    ]


def _revision(request: HttpRequest, dataset: Dataset) -> int:
    asked = request.GET.get("revision", "")
    if asked.isdigit() and int(asked) <= dataset.revision:
        return int(asked)
    return dataset.revision


def _stored(case: DatasetCase) -> dict[str, Any]:
    return {"input": case.input, "expected": case.expected, "metadata": case.metadata}


def _shown(field: str, columns: list[tuple[str, str]]) -> bool:
    return any(f == field for f, _ in columns)
